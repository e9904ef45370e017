"""The supervisor thread runs as soon as a trapped call wakes it.

max_processes (default 64) traps every fork.  A trapped call waits
interruptibly until the supervisor receives it, and a signal arriving
before that fails it with EINTR where the handler lacks SA_RESTART: dash
then prints "Cannot fork" (docs/limits.md).  The supervisor thread asks
for the shortest EEVDF slice (supervisor.c prompt_wakeups) to narrow that
window; this checks the kernel gave it, on that thread only.
"""
import os
import platform
import subprocess
import time

import pytest

from test_cli import SANDLOCK, SYS_RO

SLICE_NS = 100000


def kernel_at_least(major, minor):
    nums = platform.release().split("-")[0].split(".")
    return (int(nums[0]), int(nums[1])) >= (major, minor)


def slices(pid):
    """{tid: se.slice} of pid's threads (CONFIG_SCHED_DEBUG's sched file)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/sched") as f:
                for line in f:
                    if line.startswith("se.slice"):
                        out[int(tid)] = int(line.split(":")[1])
        except OSError:
            pass
    return out


@pytest.mark.skipif(not kernel_at_least(6, 12), reason="custom slices need Linux 6.12")
def test_supervisor_thread_gets_the_shortest_slice():
    if not slices(os.getpid()):
        pytest.skip("no se.slice in /proc/PID/sched (CONFIG_SCHED_DEBUG)")
    p = subprocess.Popen([str(SANDLOCK), "run", *SYS_RO, "--", "sleep", "5"])
    try:
        got = {}
        for _ in range(200):
            got = slices(p.pid)
            if SLICE_NS in got.values():
                break
            time.sleep(0.02)
        # The probe tells slices apart: sandlock's own thread keeps the default.
        assert got.get(p.pid) not in (None, SLICE_NS), got
        assert list(got.values()).count(SLICE_NS) == 1, got
    finally:
        p.kill()
        p.wait()
