"""A run as an object, from Python: Sandbox.spawn/create/start/wait/pause/
resume/kill, popen -> Process with StdioMode streams, run_interactive and
the context managers, on real processes.  Every test checks that no
process of the sandbox survives."""
import errno
import hashlib
import os
import socket
import threading
import time

import pytest

import sandlock
from sandlock import StdioMode
from sandlock.presets import COMMON_PATH_SYSCALLS, PathDenyHandler
from conftest import PY, SYSTEM, alive, paused

# sh opens /dev/null for background jobs' stdin.
BOX = SYSTEM + ["/dev/null"]


def box(**kw):
    kw.setdefault("timeout", 60)
    return sandlock.Sandbox(fs_readable=BOX, **kw)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def gone(pid):
    return not alive(pid)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cpu_advances(pid, tries=200):
    t0 = cpu_ticks(pid)
    for _ in range(tries):
        time.sleep(0.02)
        if cpu_ticks(pid) > t0:
            return True
    return False


SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"hello from the sandbox\n")
    c.close()
"""


def ask(port):
    with socket.create_connection(("127.0.0.1", port)) as c:
        return c.makefile("rb").readline()


def test_spawned_server_is_reachable_and_killed():
    port = free_port()
    sb = box(net_allow_bind=[port])
    sb.spawn([PY, "-c", SERVER, str(port)])
    pid = sb.pid
    assert pid and sb.is_running
    for _ in range(500):  # until it listens (bounded; no timing assertion)
        try:
            reply = ask(port)
            break
        except ConnectionRefusedError:
            time.sleep(0.01)
    else:
        pytest.fail("the server never listened")
    assert reply == b"hello from the sandbox\n"
    assert ask(port) == reply  # still serving
    sb.kill()
    r = sb.wait()
    assert r.reason == sandlock.ExitReason.KILLED
    assert not r.killed_by_handler
    assert b"ready" in r.stdout  # captured while it ran
    assert gone(pid)
    assert sb.pid is None and not sb.is_running
    with pytest.raises(ConnectionRefusedError):
        ask(port)
    with pytest.raises(RuntimeError):
        sb.kill()  # nothing runs any more


def test_spawn_refuses_a_second_process():
    sb = box()
    sb.spawn(["sleep", "1000"])
    pid = sb.pid
    try:
        with pytest.raises(RuntimeError):
            sb.spawn(["true"])
    finally:
        sb.kill()
        sb.wait()
    assert gone(pid)


def test_create_parks_before_exec_and_start_releases():
    sb = box()
    sb.create(["echo", "released"])
    pid = sb.pid
    assert pid and sb.is_running
    # Not exec'd yet: still a copy of this Python process.
    assert "echo" not in os.readlink("/proc/%d/exe" % pid)
    sb.start()
    r = sb.wait()
    assert r.stdout == b"released\n" and r.success
    assert gone(pid)
    with pytest.raises(RuntimeError):
        sb.start()


def test_pause_stops_the_whole_tree_and_resume_continues():
    sb = box()
    with sb.popen(["sh", "-c", "sh -c 'while :; do :; done' & echo $!; while :; do :; done"],
                  stdout=StdioMode.PIPED) as p:
        grandchild = int(p.stdout.readline())
        assert cpu_advances(grandchild) and cpu_advances(p.pid)  # the control
        p.pause()
        assert paused(grandchild) and paused(p.pid)
        before = cpu_ticks(grandchild), cpu_ticks(p.pid)
        time.sleep(0.3)
        assert (cpu_ticks(grandchild), cpu_ticks(p.pid)) == before
        p.resume()
        assert cpu_advances(grandchild) and cpu_advances(p.pid)
        pid = p.pid
    # Leaving the with block ended the sandbox.
    assert gone(grandchild) and gone(pid)


def test_sandbox_pause_resume_with_spawn():
    sb = box()
    sb.spawn(["sh", "-c", "while :; do :; done"])
    pid = sb.pid
    try:
        assert cpu_advances(pid)
        sb.pause()
        assert paused(pid)
        sb.resume()
        assert cpu_advances(pid)
    finally:
        sb.kill()
        sb.wait()
    assert gone(pid)


def test_popen_streams_100_mb_through_stdin_and_stdout():
    total = 100 << 20
    block = bytes(range(256)) * 4096  # 1 MiB
    sb = box()
    with sb.popen(["cat"], stdin=StdioMode.PIPE, stdout=StdioMode.PIPE) as p:
        def feed():
            for _ in range(total // len(block)):
                p.stdin.write(block)
            p.stdin.close()

        t = threading.Thread(target=feed)
        t.start()
        h = hashlib.sha256()
        n = 0
        while True:
            chunk = p.stdout.read1(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            n += len(chunk)
        t.join()
        r = p.wait()
    want = hashlib.sha256()
    for _ in range(total // len(block)):
        want.update(block)
    assert n == total and h.digest() == want.digest()
    assert r.success


def test_communicate_large_both_ways():
    data = os.urandom(8 << 20)
    sb = box()
    with sb.popen(["sh", "-c", "cat; cat /etc/hostname >&2"], stdin=StdioMode.PIPED,
                  stdout=StdioMode.PIPE, stderr=StdioMode.PIPE) as p:
        out, err = p.communicate(data)
        assert out == data
        with open("/etc/hostname", "rb") as f:
            assert err == f.read()
        assert p.returncode == 0


def test_kill_then_wait():
    sb = box()
    p = sb.popen(["sleep", "1000"])
    assert p.poll() is None and p.is_running
    pid = p.pid
    p.kill()
    r = p.wait()
    # the reference's reasons: a SIGKILL is KILLED and has no signal number
    assert r.reason == sandlock.ExitReason.KILLED and not r.killed_by_handler
    assert r.signal == -1 and not r.success
    assert gone(pid) and p.returncode == r.exit_code and p.pid is None
    p.close()


def test_wait_timeout_kills_and_returns_a_failed_result():
    sb = box()
    p = sb.popen(["sh", "-c", "sleep 1000 & echo $!; wait"], stdout=StdioMode.PIPED)
    child = int(p.stdout.readline())
    t0 = time.monotonic()
    r = p.wait(timeout=0.3)  # no exception: the reference kills and reports
    assert time.monotonic() - t0 < 10
    assert not r.success and r.reason == sandlock.ExitReason.TIMEOUT
    assert "timed out" in r.error
    assert gone(child) and not p.is_running and p.wait() is r
    p.close()


def test_wait_closes_a_piped_stdin_first():
    sb = box()
    with sb.popen(["cat"], stdin=StdioMode.PIPED, stdout=StdioMode.PIPED) as p:
        p.stdin.write(b"abc")
        p.stdin.flush()
        r = p.wait(timeout=30)  # cat sees EOF: wait() closed its stdin
        assert r.success and r.reason == sandlock.ExitReason.EXITED
        assert p.stdin.closed and p.stdout.read() == b"abc"


def test_stdio_modes_are_the_references_ints(capfd):
    assert [(m.name, int(m)) for m in StdioMode][:3] == [
        ("INHERIT", 0), ("PIPED", 1), ("NULL", 2)]
    assert isinstance(StdioMode.PIPED, int) and StdioMode.PIPE is StdioMode.PIPED
    sb = box()
    # defaults: every stream inherited, like subprocess.Popen
    with sb.popen(["sh", "-c", "echo inherited; echo err-inherited >&2"]) as p:
        assert (p.stdin, p.stdout, p.stderr) == (None, None, None)
        assert p.wait().success
    out, err = capfd.readouterr()
    assert "inherited\n" in out and "err-inherited\n" in err
    # a plain int is a mode, not an fd: 1 is PIPED, 2 is NULL
    with sb.popen(["sh", "-c", "echo piped; echo gone >&2"], stdout=1, stderr=2) as p:
        assert p.stdout.read() == b"piped\n" and p.stderr is None
        assert p.wait().success
    assert "gone" not in capfd.readouterr().err
    with pytest.raises(ValueError, match="Fd"):
        sb.popen(["true"], stdout=7)


def test_an_fd_is_given_as_fd(tmpdir_path):
    path = os.path.join(tmpdir_path, "out")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with box().popen(["echo", "via-fd"], stdout=sandlock.Fd(fd)) as p:
            assert p.wait().success
    finally:
        os.close(fd)
    assert open(path, "rb").read() == b"via-fd\n"


def test_one_process_at_a_time_and_pid_follows_popen():
    sb = box()
    assert sb.pid is None and not sb.is_running
    p = sb.popen(["sleep", "1000"])
    assert sb.is_running and sb.pid == p.pid
    for start in (lambda: sb.popen(["true"]), lambda: sb.spawn(["true"]),
                  lambda: sb.create(["true"])):
        with pytest.raises(RuntimeError, match="already running"):
            start()
    p.kill()
    p.wait()
    assert not sb.is_running and sb.pid is None
    sb.spawn(["true"])  # free again
    assert sb.wait().success
    with pytest.raises(RuntimeError, match="already running"):
        sb.spawn(["sleep", "1000"])
        sb.popen(["true"])
    sb.kill()
    sb.wait()


def test_start_before_create_says_so():
    with pytest.raises(RuntimeError, match="has not been created"):
        box().start()


def test_a_dropped_process_warns_and_ends():
    import gc
    sb = box()
    p = sb.popen(["sleep", "1000"])
    pid = p.pid
    with pytest.warns(ResourceWarning, match="not waited"):
        del p
        gc.collect()
    assert gone(pid) and not sb.is_running


def test_stdio_to_a_file_and_devnull(tmpdir_path):
    path = os.path.join(tmpdir_path, "out")
    sb = box()
    with open(path, "wb") as f:
        p = sb.popen(["sh", "-c", "echo to-file; echo to-null >&2; cat"], stdout=f,
                     stderr=StdioMode.DEVNULL, stdin=StdioMode.NULL)
        r = p.wait()
        p.close()
    with open(path, "rb") as f:
        assert f.read() == b"to-file\n"
    assert r.stderr == b"" and r.success  # stdin is /dev/null: cat ends


def test_capture_mode_collects_into_the_result():
    sb = box()
    p = sb.popen(["sh", "-c", "echo out; echo err >&2"], stdout=StdioMode.CAPTURE,
                 stderr=StdioMode.CAPTURE)
    assert p.stdout is None and p.stderr is None
    r = p.wait()
    assert r.stdout == b"out\n" and r.stderr == b"err\n"
    p.close()


def test_handlers_work_with_popen(tmpdir_path):
    secret = os.path.join(tmpdir_path, "secret")
    with open(secret, "w") as f:
        f.write("TOPSECRET\n")
    sb = sandlock.Sandbox(fs_readable=BOX + [tmpdir_path], timeout=60)
    # Control: without the handler the file is readable.
    assert sb.run(["cat", secret]).stdout == b"TOPSECRET\n"
    deny = PathDenyHandler(deny=[secret], errno=errno.EACCES)
    with sb.popen(["cat", secret], stdout=StdioMode.PIPED, stderr=StdioMode.PIPED,
                  handlers=[(s, deny) for s in COMMON_PATH_SYSCALLS]) as p:
        out, err = p.communicate()
        assert out == b"" and b"Permission denied" in err
        assert p.returncode != 0


def test_context_manager_ends_everything():
    with box() as sb:
        sb.spawn(["sh", "-c", "sleep 1000 & setsid sleep 1000 & wait"])
        pid = sb.pid
        assert sb.is_running
    assert gone(pid)
    assert not sb.is_running


def test_process_dropped_without_wait_leaves_nothing():
    sb = box()
    p = sb.popen(["sh", "-c", "sleep 1000 & echo $!; setsid sleep 1000 & echo $!; wait"],
                 stdout=StdioMode.PIPED)
    pids = [int(p.stdout.readline()), int(p.stdout.readline()), p.pid]
    assert all(alive(x) for x in pids)
    p.close()
    assert all(gone(x) for x in pids)


def test_run_interactive_passes_the_streams_through(capfd):
    sb = box()
    code = sb.run_interactive(["sh", "-c", "echo interactive; echo on-stderr >&2; exit 4"])
    out, err = capfd.readouterr()
    assert code == 4
    assert "interactive" in out and "on-stderr" in err


def test_bad_stdio_is_an_error():
    sb = box()
    with pytest.raises(TypeError):
        sb.popen(["true"], stdout="pipe")
    with pytest.raises(ValueError):
        sb.popen(["true"], stdin=-1)
    with pytest.raises(ValueError):
        sandlock.Fd(-1)
    with pytest.raises(sandlock.SandlockError):
        sb.popen(["no-such-command-here"])
