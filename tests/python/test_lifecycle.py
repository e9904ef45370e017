"""The sandbox does not outlive the process that supervises it.

A supervisor that is itself SIGKILLed runs no cleanup code.  Its child, the
sandbox's init, has a catchable PR_SET_PDEATHSIG: on it, init kills its
whole subtree (the command and everything the command started) and exits.
"""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO, SYSTEM, alive as _alive, asan_host

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
    env = asan_host(dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
    pidfile = os.path.join(tmpdir_path, "pid")
    sup = subprocess.Popen([sys.executable, "-c", SCRIPT, tmpdir_path, script], env=env)
    victim = None
    try:
        assert _wait_for(lambda: os.path.exists(pidfile), 30), "sandboxed command did not start"
        victim = int(open(pidfile).read())
        assert _alive(victim)
        group = _v2_group(victim)
        sup.send_signal(signal.SIGKILL)
        sup.wait(timeout=30)
        assert _wait_for(lambda: not _alive(victim), 10), "sandboxed process outlived its supervisor"
    finally:
        if sup.poll() is None:
            sup.kill()
            sup.wait()
        if victim and _alive(victim):  # do not leak it into later tests
            os.kill(victim, signal.SIGKILL)
    return group


def _v2_group(pid):
    """The host path of pid's cgroup v2 group, or None."""
    try:
        rel = [l.split("::", 1)[1].strip() for l in open("/proc/%d/cgroup" % pid)
               if l.startswith("0::")][0]
        mounts = [l.split() for l in open("/proc/self/mountinfo") if " - cgroup2 " in l]
    except (OSError, IndexError):
        return None
    return os.path.join(mounts[0][4], rel.lstrip("/")) if mounts else None


def test_sigkilled_supervisor_takes_the_sandbox_with_it(tmpdir_path):
    # Without PDEATHSIG the sandboxed sleep would be reparented to init
    # and keep running after its supervisor is gone.
    _kill_supervisor_then_check(tmpdir_path, COMMAND)


def test_a_group_left_by_a_sigkilled_supervisor_is_removed_by_the_next_run(tmpdir_path):
    # Nobody is left to remove the run's empty cgroup: the next run (any
    # process) sweeps sandlock-PID-N groups whose PID is gone.
    group = _kill_supervisor_then_check(tmpdir_path, COMMAND)
    if not group or not os.path.basename(group).startswith("sandlock-"):
        pytest.skip("the run had no cgroup of its own here")
    assert _wait_for(lambda: not os.path.exists(group) or not open(
        os.path.join(group, "cgroup.procs")).read(), 10)
    # Left behind (unless a run of another process on this machine, which
    # sweeps too, was faster).
    r = subprocess.run([os.path.join(os.environ.get("SANDLOCK_BUILD") or
                                     os.path.join(REPO, "build"), "sandlock"),
                        "run", "-r", "/usr", "-r", "/lib", "-r", "/lib64", "-r", "/bin", "--",
                        "true"], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(group)


def test_a_long_lived_caller_sweeps_left_groups_at_every_run(tmpdir_path):
    """A caller that has run sandboxes before (this pytest process) still
    sweeps a group left meanwhile by a SIGKILLed caller: every run sweeps,
    not only a process's first (a Python supervisor piled them up)."""
    import sandlock
    box = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)
    assert box.run(["/bin/true"]).exit_code == 0  # not this process's first run
    group = _kill_supervisor_then_check(tmpdir_path, COMMAND)
    if not group or not os.path.basename(group).startswith("sandlock-"):
        pytest.skip("the run had no cgroup of its own here")
    assert _wait_for(lambda: not os.path.exists(group) or not open(
        os.path.join(group, "cgroup.procs")).read(), 10)
    # Left behind, unless another process's run (they sweep too) was faster:
    # then this process's next run has nothing to do, and the test proves
    # nothing; its own sweep is shown whenever the group is still there.
    assert box.run(["/bin/true"]).exit_code == 0
    assert not os.path.exists(group)


def test_sigkilled_supervisor_takes_grandchildren_with_it(tmpdir_path):
    # PR_SET_PDEATHSIG reaches only the supervisor's direct child; the
    # grandchild dies only because that child (init) kills its subtree.
    _kill_supervisor_then_check(tmpdir_path, GRANDCHILD)


def test_sigkilled_supervisor_takes_setsid_grandchildren_with_it(tmpdir_path):
    # Not even in the sandbox's process group: found as init's descendant.
    _kill_supervisor_then_check(tmpdir_path, SETSID_GRANDCHILD)


# ---- an init killed from outside leaves nothing behind (`sandlock run`) ----

SANDLOCK = os.path.join(os.environ.get("SANDLOCK_BUILD") or os.path.join(REPO, "build"),
                        "sandlock")

# Records init's pid (the command's parent) and that of a setsid() child
# (out of the process group, so no killpg reaches it), then waits.
ORPHAN_MAKER = textwrap.dedent("""
    import os, sys, time
    d = sys.argv[1]
    if os.fork() == 0:
        os.setsid()
        open(d + "/orphan.tmp", "w").write(str(os.getpid()))
        os.rename(d + "/orphan.tmp", d + "/orphan")
        os.execv("/bin/sleep", ["sleep", "300"])
    open(d + "/init.tmp", "w").write(str(os.getppid()))
    os.rename(d + "/init.tmp", d + "/init")
    time.sleep(300)
""")


def _kill_init_then_check(tmpdir_path, prefix=()):
    os.chmod(tmpdir_path, 0o777)
    ro = [a for d in SYSTEM if os.path.exists(d) for a in ("-r", d)]
    cli = subprocess.Popen([*prefix, SANDLOCK, "run", *ro, "-w", tmpdir_path, "-t", "120",
                            "--", "/usr/bin/python3", "-c", ORPHAN_MAKER, tmpdir_path])
    orphan = None
    try:
        files = [os.path.join(tmpdir_path, f) for f in ("orphan", "init")]
        assert _wait_for(lambda: all(os.path.exists(f) for f in files), 30)
        orphan, init = (int(open(f).read()) for f in files)
        assert _alive(orphan)
        os.kill(init, signal.SIGKILL)  # what RLIMIT_CPU did to init in the attack
        assert cli.wait(timeout=60) == 128 + signal.SIGKILL
        # Checked once the CLI has returned: no waiting for a late death.
        assert not _alive(orphan), "a setsid() process outlived `sandlock run`"
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        if orphan and _alive(orphan):
            os.kill(orphan, signal.SIGKILL)


def test_cli_init_killed_leaves_no_survivor(tmpdir_path):
    # As root the library puts the sandbox in its own cgroup: cgroup.kill.
    _kill_init_then_check(tmpdir_path)


def test_cli_init_killed_leaves_no_survivor_without_cgroup(tmpdir_path):
    # Unprivileged, no cgroup can be made: the CLI is a child subreaper and
    # kills the orphans that come to it.
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    _kill_init_then_check(tmpdir_path, (setpriv, "--reuid=65534", "--regid=65534",
                                        "--clear-groups"))
