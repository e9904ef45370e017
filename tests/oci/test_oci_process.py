"""A container's process through podman: exec, stop (SIGTERM, then SIGKILL
after the timeout), kill, ps states, logs, and `podman run -it` / `exec
-it` on a real pty (tmux)."""
import os
import shutil
import subprocess
import time

import pytest

from conftest import OCI, alive, podman, unique


def inspect(name, fmt):
    return podman("inspect", "-f", fmt, name).stdout.strip()


def wait_for(pred, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def start(image, name, script):
    podman("run", "-d", "--name", name, image, "/bin/sh", "-c", script, check=True)
    assert wait_for(lambda: "started" in podman("logs", name).stdout), podman("logs", name)


def test_ps_states_created_running_exited(image, cname):
    podman("create", "--name", cname, image, "/bin/sh", "-c", "sleep 30", check=True)
    podman("init", cname, check=True)  # the runtime's create: parked before exec
    assert inspect(cname, "{{.State.Status}}") == "initialized"
    podman("start", cname, check=True)
    assert inspect(cname, "{{.State.Status}}") == "running"
    assert cname in podman("ps", "--format", "{{.Names}}").stdout
    podman("kill", cname, check=True)
    assert wait_for(lambda: inspect(cname, "{{.State.Status}}") == "exited")
    assert inspect(cname, "{{.State.ExitCode}}") == "137"
    assert cname not in podman("ps", "--format", "{{.Names}}").stdout


def test_exec_into_a_running_container(image, cname):
    start(image, cname, "echo shared > /tmp/from-main; echo started; sleep 30")
    r = podman("exec", cname, "/bin/sh", "-c", "cat /tmp/from-main; hostname; exit 9")
    assert r.returncode == 9, r.stderr
    # The same rootfs view, tmpfs scratch dirs and hostname as the container.
    assert r.stdout.splitlines() == ["shared", inspect(cname, "{{.Config.Hostname}}")]
    r = podman("exec", "-e", "X=1", "-w", "/etc", cname, "/bin/sh", "-c", "echo $X; pwd")
    assert r.stdout == "1\n/etc\n", r.stderr
    # An exec still running when the container stops ends with it.
    podman("exec", "-d", cname, "/bin/sh", "-c", "echo $$ > /tmp/exec-pid; sleep 60",
           check=True)
    assert wait_for(lambda: podman("exec", cname, "/bin/cat", "/tmp/exec-pid").returncode == 0)
    # No pid namespace: the guest's pid is the host's.
    pid = int(podman("exec", cname, "/bin/cat", "/tmp/exec-pid").stdout)
    assert alive(pid)
    t0 = time.time()
    podman("stop", "-t", "1", cname, check=True)
    # Its supervisor sees the container's go and ends it (asynchronously).
    assert wait_for(lambda: not alive(pid), 5), "the exec outlived its container"
    assert time.time() - t0 < 10


def start_with(image, name, opts, script):
    podman("run", "-d", "--name", name, *opts, image, "/bin/sh", "-c", script, check=True)
    assert wait_for(lambda: "started" in podman("logs", name).stdout), podman("logs", name)


FORKS = "for i in 1 2 3 4 5; do sleep 2 & done; wait; echo forked"


def test_exec_shares_the_containers_process_budget(image, cname):
    other = unique()
    try:
        # The container holds 4 processes (sh and 3 sleeps).  An exec's 6
        # (sh, 5 sleeps) fit a budget of their own (the probe works) ...
        script = "sleep 1000 & sleep 1000 & sleep 1000 & echo started; wait"
        start_with(image, other, ("--pids-limit", "10"), script)
        r = podman("exec", other, "/bin/sh", "-c", FORKS)
        assert "forked" in r.stdout and "can't fork" not in r.stderr, (r.stdout, r.stderr)
        # ... but not what is left of the container's 8: 4 + 6 > 8.
        script = ("mkfifo /tmp/go; sleep 1000 & sleep 1000 & sleep 1000 & echo started; "
                  "read x < /tmp/go; sleep 0 & wait $!; echo container-forked")
        start_with(image, cname, ("--pids-limit", "8"), script)
        r = podman("exec", cname, "/bin/sh", "-c", FORKS)
        assert "can't fork" in r.stderr, (r.stdout, r.stderr)
        # And the other way: while an exec holds 4, the container (4) is at
        # its 8 and its own next fork is refused.
        podman("exec", "-d", cname, "/bin/sh", "-c", "sleep 60 & sleep 60 & sleep 60 & wait",
               check=True)
        time.sleep(0.5)
        podman("exec", cname, "/bin/sh", "-c", "echo go > /tmp/go", check=True)
        assert wait_for(lambda: "can't fork" in podman("logs", cname).stderr), \
            podman("logs", cname)
        assert "container-forked" not in podman("logs", cname).stdout
    finally:
        podman("rm", "-f", "-t", "0", other)


def test_exec_shares_the_containers_memory_budget(image, cname):
    # 40 MiB fit an exec's own 64 MiB (the probe works) ...
    start_with(image, cname, ("--memory", "64m"), "echo started; sleep 1000")
    r = podman("exec", cname, "/bin/probe", "memhog", "40")
    assert r.stdout == "ok 40\n", (r.stdout, r.stderr)
    podman("rm", "-f", "-t", "0", cname)
    # ... not beside the container's own 40 of the same 64.
    podman("run", "-d", "--name", cname, "--memory", "64m", image, "/bin/probe", "memhold",
           "40", check=True)
    assert wait_for(lambda: "held" in podman("logs", cname).stdout), podman("logs", cname)
    assert podman("exec", cname, "/bin/probe", "memhog", "10").stdout == "ok 10\n"
    r = podman("exec", cname, "/bin/probe", "memhog", "40")
    assert r.returncode != 0 and "ok 40" not in r.stdout, (r.returncode, r.stdout)


def test_stop_sends_term_then_kill_after_the_timeout(image, cname):
    start(image, cname, "trap 'echo got-term; exit 3' TERM; echo started; "
                        "while :; do sleep 0.1; done")
    podman("stop", "-t", "10", cname, check=True)
    assert inspect(cname, "{{.State.ExitCode}}") == "3"
    assert "got-term" in podman("logs", cname).stdout
    name2 = unique()
    try:
        start(image, name2, "trap '' TERM; echo started; while :; do sleep 0.1; done")
        t0 = time.time()
        podman("stop", "-t", "2", name2, check=True)
        elapsed = time.time() - t0
        assert inspect(name2, "{{.State.ExitCode}}") == "137"
        assert elapsed >= 1.9, "SIGKILL before the timeout"
    finally:
        podman("rm", "-f", "-t", "0", name2)


def test_kill_delivers_the_signal_and_logs_keep_output(image, cname):
    start(image, cname, "trap 'echo got-usr1' USR1; echo started; "
                        "while :; do sleep 0.1; done")
    podman("kill", "-s", "USR1", cname, check=True)
    assert wait_for(lambda: "got-usr1" in podman("logs", cname).stdout)
    assert inspect(cname, "{{.State.Status}}") == "running"
    podman("kill", "-s", "KILL", cname, check=True)
    assert wait_for(lambda: inspect(cname, "{{.State.Status}}") == "exited")
    logs = podman("logs", cname).stdout
    assert logs.splitlines() == ["started", "got-usr1"]


def test_pause_and_unpause_freeze_the_whole_container(image, cname, hostdir):
    podman("run", "-d", "--name", cname, "-v", hostdir + ":/out", image, "/bin/sh", "-c",
           "i=0; while :; do i=$((i+1)); echo $i > /out/n.tmp; mv /out/n.tmp /out/n; "
           "sleep 0.05; done", check=True)
    n = os.path.join(hostdir, "n")

    def count():
        try:
            return int(open(n).read() or 0)
        except FileNotFoundError:
            return 0
    assert wait_for(lambda: count() > 2)
    podman("pause", cname, check=True)
    assert inspect(cname, "{{.State.Status}}") == "paused"
    cid = inspect(cname, "{{.Id}}")
    st = subprocess.run([OCI, "state", cid], capture_output=True, text=True)
    assert '"status": "paused"' in st.stdout
    r = subprocess.run([OCI, "delete", cid], capture_output=True, text=True)
    assert r.returncode != 0 and "paused" in r.stderr
    frozen = count()
    time.sleep(0.5)
    assert count() == frozen, "the container ran while paused"
    podman("unpause", cname, check=True)
    assert wait_for(lambda: count() > frozen + 3)
    assert inspect(cname, "{{.State.Status}}") == "running"


# ---- a real pty: podman run -it / exec -it inside tmux ----

def tmux(*args):
    return subprocess.run(["tmux", "-L", "sandlock-oci-test"] + list(args),
                          capture_output=True, text=True)


@pytest.fixture
def session():
    if not shutil.which("tmux"):
        pytest.skip("tmux is not installed (.ci/run installs it)")
    name = unique("tmux")
    yield name
    tmux("kill-session", "-t", name)


def pane(name):
    return tmux("capture-pane", "-p", "-t", name).stdout


def type_until(target, keys, expect, tries=5):
    """Type keys until expect shows: a shell discards what was typed
    before it set up its line editor (TCSAFLUSH), right after its prompt."""
    for _ in range(tries):
        tmux("send-keys", "-t", target, keys, "Enter")
        if wait_for(lambda: expect in tmux("capture-pane", "-p", "-t", target).stdout, 2):
            return True
    return False


def test_run_it_on_a_real_pty(image, cname, session):
    cmd = ("podman --cgroup-manager cgroupfs --runtime %s run -it --rm --name %s %s /bin/sh; "
           "echo EXIT=$?; sleep 30") % (OCI, cname,
                                          image)
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd)
    assert wait_for(lambda: "/ #" in pane(session)), pane(session)
    assert type_until(session, "echo A$((6*7))B; stty size; [ -t 0 ] && echo TT''Y", "TTY"), \
        pane(session)
    out = pane(session)
    assert "A42B" in out and "30 100" in out
    # Job control: the shell owns the terminal's foreground (/dev/tty).
    assert "job control turned off" not in out
    assert type_until(session, "sleep 100 & jobs", "Running"), pane(session)
    assert type_until(session, "kill %1; wait; echo k''illed", "killed"), pane(session)
    # A second shell on its own pty: podman exec -it.
    tmux("split-window", "-t", session,
         "podman --cgroup-manager cgroupfs --runtime %s exec -it %s /bin/sh -c "
         "'[ -t 1 ] && echo EXEC-TTY; sleep 1'; sleep 30" % (OCI, cname))
    assert wait_for(lambda: "EXEC-TTY" in tmux("capture-pane", "-p", "-t",
                                                session + ".1").stdout)
    assert type_until(session + ".0", "exit 5", "EXIT=5"), pane(session + ".0")
