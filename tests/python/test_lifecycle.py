"""The sandbox does not outlive the process that supervises it.

A supervisor that is itself SIGKILLed runs no cleanup code.  Its child, the
sandbox's init, has a catchable PR_SET_PDEATHSIG: on it, init kills its
whole subtree (the command and everything the command started) and exits.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import REPO, SYSTEM, alive as _alive

# Run argv[2] (a shell script) in a sandbox; argv[1] is a writable directory.
SCRIPT = textwrap.dedent("""
    import sys
    import sandlock
    tmp = sys.argv[1]
    # /dev/null: sh reads a background job's stdin from it
    sb = sandlock.Sandbox(fs_readable=%r + ["/dev/null"], fs_writable=[tmp], timeout=300)
    sb.run(["/bin/sh", "-c", sys.argv[2], "sh", tmp + "/pid"])
""" % (SYSTEM,))

# The command records its pid, then lives far longer than the test.
COMMAND = 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300'
# The command records the pid of a background grandchild and waits for it.
GRANDCHILD = 'sleep 300 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait'
# The grandchild leaves the process group and the session first.
SETSID_GRANDCHILD = 'setsid sleep 300 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait'




def _wait_for(pred, seconds):
    deadline = time.monotonic() + seconds
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.02)
    return pred()


def _kill_supervisor_then_check(tmpdir_path, script):
    """Start a supervisor running script, SIGKILL it once the script wrote a
    pid, and check that the process with that pid dies too."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    pidfile = os.path.join(tmpdir_path, "pid")
    sup = subprocess.Popen([sys.executable, "-c", SCRIPT, tmpdir_path, script], env=env)
    victim = None
    try:
        assert _wait_for(lambda: os.path.exists(pidfile), 30), "sandboxed command did not start"
        victim = int(open(pidfile).read())
        assert _alive(victim)
        sup.send_signal(signal.SIGKILL)
        sup.wait(timeout=30)
        assert _wait_for(lambda: not _alive(victim), 10), "sandboxed process outlived its supervisor"
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()
        if victim and _alive(victim):  # do not leak it into later tests
            os.kill(victim, signal.SIGKILL)


def test_sigkilled_supervisor_takes_the_sandbox_with_it(tmpdir_path):
    # Without PDEATHSIG the sandboxed sleep would be reparented to init
    # and keep running after its supervisor is gone.
    _kill_supervisor_then_check(tmpdir_path, COMMAND)


def test_sigkilled_supervisor_takes_grandchildren_with_it(tmpdir_path):
    # PR_SET_PDEATHSIG reaches only the supervisor's direct child; the
    # grandchild dies only because that child (init) kills its subtree.
    _kill_supervisor_then_check(tmpdir_path, GRANDCHILD)


def test_sigkilled_supervisor_takes_setsid_grandchildren_with_it(tmpdir_path):
    # Not even in the sandbox's process group: found as init's descendant.
    _kill_supervisor_then_check(tmpdir_path, SETSID_GRANDCHILD)
