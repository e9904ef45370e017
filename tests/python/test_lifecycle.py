"""The sandbox does not outlive the process that supervises it.

PR_SET_PDEATHSIG(SIGKILL) in the child means a supervisor that is itself
SIGKILLed (no cleanup code runs) still takes the sandboxed command with it.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import REPO, SYSTEM

SCRIPT = textwrap.dedent("""
    import sys
    import sandlock
    tmp = sys.argv[1]
    sb = sandlock.Sandbox(fs_readable=%r, fs_writable=[tmp], timeout=300)
    # The command records its pid, then lives far longer than the test.
    sb.run(["/bin/sh", "-c", 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300',
            "sh", tmp + "/pid"])
""" % (SYSTEM,))


def _alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(pred, seconds):
    deadline = time.monotonic() + seconds
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.02)
    return pred()


def test_sigkilled_supervisor_takes_the_sandbox_with_it(tmpdir_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    pidfile = os.path.join(tmpdir_path, "pid")
    sup = subprocess.Popen([sys.executable, "-c", SCRIPT, tmpdir_path], env=env)
    try:
        assert _wait_for(lambda: os.path.exists(pidfile), 30), "sandboxed command did not start"
        child = int(open(pidfile).read())
        assert _alive(child)
        # Without PDEATHSIG the sandboxed sleep would be reparented to init
        # and keep running after its supervisor is gone.
        sup.send_signal(signal.SIGKILL)
        sup.wait(timeout=30)
        assert _wait_for(lambda: not _alive(child), 10), "sandboxed command outlived its supervisor"
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()
