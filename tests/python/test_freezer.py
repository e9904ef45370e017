"""pause()/resume() by the cgroup v2 freezer where the run has a v2 group:
the whole group is frozen (cgroup.events "frozen 1") and no guest process
is in a job-control stop ('T'), so nothing inside can see or undo it.
The SIGSTOP fallback (no v2 group) is tested in tests/c/test_freezer.c,
which can force it."""
import os
import time

import pytest

import sandlock
from conftest import SYSTEM, alive, cgroup_frozen as frozen, v2_group_dir as group_dir

BOX = SYSTEM + ["/dev/null"]


def box(**kw):
    kw.setdefault("timeout", 60)
    return sandlock.Sandbox(fs_readable=BOX, **kw)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_advances(pid, tries=200):
    t0 = cpu_ticks(pid)
    for _ in range(tries):
        time.sleep(0.02)
        if cpu_ticks(pid) > t0:
            return True
    return False


def status_state(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("State:"):
                return line.split(":", 1)[1].strip()
    return ""


def test_pause_uses_the_cgroup_freezer_when_available():
    sb = box()
    with sb.popen(["sh", "-c", "sh -c 'while :; do :; done' & echo $!; while :; do :; done"],
                  stdout=sandlock.StdioMode.PIPED) as p:
        grandchild = int(p.stdout.readline())
        d = group_dir(p.pid)
        if d is None:
            pytest.skip("the run has no cgroup v2 group here (no v2 mount or no permission)")
        assert d != group_dir(os.getpid())  # the run's own group, not ours
        # Control: running, not frozen, burning CPU.
        assert not frozen(d) and cpu_advances(grandchild) and cpu_advances(p.pid)
        p.pause()
        assert frozen(d)
        for pid in (p.pid, grandchild):
            assert not status_state(pid).startswith("T"), status_state(pid)
        before = cpu_ticks(grandchild), cpu_ticks(p.pid)
        time.sleep(0.3)
        assert (cpu_ticks(grandchild), cpu_ticks(p.pid)) == before
        p.pause()  # twice is once
        p.resume()
        assert not frozen(d)
        assert cpu_advances(grandchild) and cpu_advances(p.pid)
        pid = p.pid
    assert not alive(grandchild) and not alive(pid)


def test_a_frozen_sandbox_can_be_killed_and_times_out():
    sb = box()
    sb.spawn(["sh", "-c", "sleep 1000 & wait"])
    pid = sb.pid
    d = group_dir(pid)
    if d is None:
        sb.kill()
        sb.wait()
        pytest.skip("the run has no cgroup v2 group here")
    sb.pause()
    assert frozen(d)
    sb.kill()
    r = sb.wait()
    assert not r.success and not alive(pid)
    # A timeout still ends a frozen sandbox (its init is thawed to end it).
    sb = box(timeout=1)
    sb.spawn(["sh", "-c", "sleep 1000 & wait"])
    pid = sb.pid
    sb.pause()
    r = sb.wait()
    assert not r.success and not alive(pid)
