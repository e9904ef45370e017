"""Interpreter finalization while a run with handlers is still going."""
import os
import subprocess
import sys
import textwrap
import time

from conftest import REPO, SYSTEM, asan_host

SCRIPT = textwrap.dedent("""
    import os, sys, threading, time
    import sandlock
    from sandlock.handler import Handler, NotifAction

    tmp = sys.argv[1]
    pidfile = os.path.join(tmp, "pid")

    class Busy(Handler):
        def handle(self, ctx):
            ctx.read_path()
            return NotifAction.continue_()

    sb = sandlock.Sandbox(fs_readable=%r, fs_writable=[tmp], timeout=120)
    # A slow child that keeps making trapped openat calls, so notifications
    # arrive while the interpreter finalizes.
    cmd = ["/bin/sh", "-c",
           'echo $$ > "$1"; while :; do cat /etc/hostname >&2; sleep 0.01; done', "sh", pidfile]

    t = threading.Thread(target=lambda: sb.run_with_handlers(cmd, [("openat", Busy())]),
                         daemon=True)
    t.start()
    while not os.path.exists(pidfile) or not open(pidfile).read().strip():
        time.sleep(0.01)
    print("child", open(pidfile).read().strip(), flush=True)
    # main thread returns here: Py_FinalizeEx runs with the run still alive
""" % (SYSTEM,))


def _group_alive(pgid):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def test_main_thread_exit_during_run(tmpdir_path):
    env = asan_host(dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    p = subprocess.run([sys.executable, "-c", SCRIPT, tmpdir_path], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode >= 0, (p.returncode, p.stderr)  # not killed by a signal (no crash)
    assert "Fatal Python error" not in p.stderr and "Segmentation" not in p.stderr, p.stderr
    assert p.stdout.startswith("child "), p.stderr
    pid = int(p.stdout.split()[1])
    # The child (the group leader) is SIGKILLed by PR_SET_PDEATHSIG; its
    # short-lived children finish on their own.  Wait generously.
    deadline = time.monotonic() + 30
    while _group_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group_alive(pid)
