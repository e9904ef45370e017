"""COW fork mode: Sandbox(init_fn=, work_fn=).fork(n) and reduce().

Every test checks what the clones themselves saw (their stdout), and
that nothing of the fork is left running afterwards."""
import faulthandler
import os
import signal
import socket
import sys
import time

import pytest

import sandlock
from conftest import PY, SYSTEM, alive, asan_host

SUM_STDIN = "import sys; print(sum(int(l) for l in sys.stdin))"


def descendants():
    """Pids of every live descendant of this test process."""
    out, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            for k in kids:
                if alive(k):
                    out.add(k)
                todo.append(k)
    return out


def open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module", autouse=True)
def warm_library():
    """One plain run first: the library keeps a few fds of its own from
    its first run (the cgroup root), which are not the fork's."""
    sandlock.Sandbox(fs_readable=SYSTEM).run(["/bin/true"])


@pytest.fixture(autouse=True)
def nothing_left(warm_library):
    """No process of the fork survives a test, and no fd of it leaks."""
    import gc

    before, fds = descendants(), open_fds()
    yield
    gc.collect()  # a ForkResult dropped by the test closes now
    assert descendants() - before == set()
    assert open_fds() - fds == set()


def box(**kw):
    kw.setdefault("fs_readable", SYSTEM)
    kw.setdefault("timeout", 60)
    return sandlock.Sandbox(**kw)


def square(i):
    assert os.environ["CLONE_ID"] == str(i)
    print(i * i)


def test_fork_8_and_reduce_compute_a_known_sum():
    mapper = box(work_fn=square)
    clones = mapper.fork(8)
    assert len(clones.pids) == 8 and len(set(clones.pids)) == 8
    reducer = box()
    res = reducer.reduce([PY, "-c", SUM_STDIN], clones)
    assert res.success, res
    assert res.stdout == b"%d\n" % sum(i * i for i in range(8))
    per_clone = clones.wait()
    assert [r.stdout for r in per_clone] == [b"%d\n" % (i * i) for i in range(8)]
    assert all(r.success and r.reason == sandlock.ExitReason.EXITED for r in per_clone)


def test_clone_id_is_in_the_environment_and_the_argument():
    def work(i):
        print(os.environ["CLONE_ID"], i)

    with box(work_fn=work).fork(5) as clones:
        outs = [r.stdout for r in clones.wait()]
    assert outs == [b"%d %d\n" % (i, i) for i in range(5)]


def test_clones_cannot_read_outside_fs_readable(tmpdir_path):
    secret = os.path.join(tmpdir_path, "secret")
    with open(secret, "w") as f:
        f.write("top secret")
    with open(secret) as f:  # the probe works outside the sandbox
        assert f.read() == "top secret"

    def work(i):
        try:
            with open(secret) as f:
                print("read", f.read())
        except PermissionError:
            print("denied")

    with box(work_fn=work).fork(3) as clones:
        assert [r.stdout for r in clones.wait()] == [b"denied\n"] * 3


def test_clones_cannot_connect():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]
    try:
        probe = socket.create_connection(("127.0.0.1", port))  # reachable outside
        probe.close()
        srv.accept()[0].close()

        def work(i):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                print("connected")
            except OSError as e:
                print("refused", e.errno)

        with box(work_fn=work).fork(3) as clones:
            outs = [r.stdout for r in clones.wait()]
    finally:
        srv.close()
    assert all(o.startswith(b"refused") for o in outs), outs


_STATE = {}


def _build_state():
    _STATE["data"] = list(range(200000))
    _STATE["where"] = os.getpid()


def test_init_fn_state_is_shared_copy_on_write():
    def work(i):
        data = _STATE["data"]
        first = data[0]
        data[0] = 1000 + i      # seen by this clone only
        print(len(data), first, data[0], sum(data[1:10]))

    caller = os.getpid()
    with box(init_fn=_build_state, work_fn=work).fork(6) as clones:
        outs = [r.stdout for r in clones.wait()]
    # Each clone saw the template's list untouched by its siblings.
    assert outs == [b"200000 0 %d 45\n" % (1000 + i) for i in range(6)]
    # init_fn ran in the template, not in this process.
    assert "data" not in _STATE and caller == os.getpid()


def test_init_fn_runs_once_and_confined(tmpdir_path):
    log = os.path.join(tmpdir_path, "log")
    outside = os.path.join(tmpdir_path, "..", os.path.basename(tmpdir_path) + "-x")

    def init():
        with open(log, "a") as f:
            f.write("init\n")
        try:
            open(outside, "w").close()
            print("escaped", file=sys.stderr)
        except PermissionError:
            with open(log, "a") as f:
                f.write("denied\n")

    with box(fs_writable=[tmpdir_path], init_fn=init, work_fn=print).fork(4) as clones:
        assert [r.stdout for r in clones.wait()] == [b"%d\n" % i for i in range(4)]
    with open(log) as f:
        assert f.read() == "init\ndenied\n"
    assert not os.path.exists(outside)


def test_a_crashing_clone_does_not_break_the_others():
    def work(i):
        if i == 2:
            faulthandler.disable()  # pytest's would print a dump first
            os.kill(os.getpid(), signal.SIGSEGV)
        if i == 4:
            raise ValueError("clone 4 fails")
        if i == 5:
            sys.exit(7)
        print("ok", i)

    with box(work_fn=work).fork(7) as clones:
        res = clones.wait()
    assert res[2].reason == sandlock.ExitReason.SIGNALED and res[2].signal == signal.SIGSEGV
    assert not res[2].success and res[2].exit_code == 128 + signal.SIGSEGV
    assert res[4].exit_code == 1 and not res[4].success
    assert res[5].exit_code == 7
    for i in (0, 1, 3, 6):
        assert res[i].success and res[i].stdout == b"ok %d\n" % i


def _hang(i):
    """Report this clone's pid and a grandchild's, then hang."""
    kid = os.fork()
    if kid == 0:
        time.sleep(1000)
        os._exit(0)
    print(os.getpid(), kid, flush=True)
    time.sleep(1000)


def _reported_pids(results):
    pids = []
    for r in results:
        pids.extend(int(x) for x in r.stdout.split())
    return pids


def test_timeout_kills_hanging_clones_and_their_children():
    with box(timeout=0.5, work_fn=_hang).fork(3) as clones:
        res = clones.wait()
    assert [r.reason for r in res] == [sandlock.ExitReason.TIMEOUT] * 3
    assert all(r.exit_code == 124 and not r.success for r in res)
    pids = _reported_pids(res)
    assert len(pids) == 6 and not any(alive(p) for p in pids)


def test_caller_raising_inside_the_with_block_ends_everything():
    with pytest.raises(RuntimeError):
        with box(work_fn=_hang).fork(3) as clones:
            pids = list(clones.pids)
            assert all(alive(p) for p in pids)
            for pid in pids:  # what the kernel says of each clone
                with open("/proc/%d/status" % pid) as f:
                    status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
                assert status["NoNewPrivs"].strip() == "1"
                assert status["Seccomp"].strip() == "2"       # a filter is installed
                assert int(status["CapEff"], 16) == 0
            raise RuntimeError("the caller's code fails")
    assert not any(alive(p) for p in pids)


def test_kill_then_wait_reports_killed():
    clones = box(work_fn=_hang).fork(2)
    clones.kill()
    res = clones.wait()
    assert [r.reason for r in res] == [sandlock.ExitReason.KILLED] * 2


def test_background_children_end_with_the_last_clone():
    def work(i):
        kid = os.fork()
        if kid == 0:            # keeps the clone's stdout open, forever
            time.sleep(1000)
            os._exit(0)
        print(kid)

    with box(work_fn=work).fork(2) as clones:
        res = clones.wait()
    assert all(r.success for r in res)
    assert not any(alive(p) for p in _reported_pids(res))


def test_a_dropped_fork_result_leaves_nothing():
    clones = box(work_fn=_hang).fork(2)
    pids = list(clones.pids)
    del clones
    assert not any(alive(p) for p in pids)


def test_fork_100_clones():
    with box(work_fn=print).fork(100) as clones:
        res = clones.wait()
    assert [r.stdout for r in res] == [b"%d\n" % i for i in range(100)]


def test_max_output_caps_each_clone():
    def work(i):
        sys.stdout.write("x" * 5000)

    with box(max_output=1000, work_fn=work).fork(2) as clones:
        res = clones.wait()
    assert [(len(r.stdout), r.stdout_truncated) for r in res] == [(1000, 4000)] * 2


def test_cwd_and_env_apply_to_clones(tmpdir_path):
    def work(i):
        print(os.getcwd(), os.environ.get("GREETING"))

    sb = box(cwd=tmpdir_path, env={"GREETING": "hi"}, fs_readable=SYSTEM + [tmpdir_path],
             work_fn=work)
    with sb.fork(2) as clones:
        res = clones.wait()
    assert [r.stdout for r in res] == [("%s hi\n" % tmpdir_path).encode()] * 2


def test_init_fn_raising_is_a_fork_error():
    def init():
        raise KeyError("no model")

    with pytest.raises(sandlock.ForkError, match="no model"):
        box(init_fn=init, work_fn=print).fork(2)


def test_init_fn_past_the_timeout_is_a_timeout_error():
    with pytest.raises(TimeoutError):
        box(timeout=0.3, init_fn=lambda: time.sleep(1000), work_fn=print).fork(2)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(sandlock.PolicyValueError, match="work_fn"):
        box().fork(2)
    with pytest.raises(sandlock.PolicyValueError, match="at least 1, got 0"):
        box(work_fn=print).fork(0)
    with pytest.raises(sandlock.PolicyTypeError, match="n must be an int"):
        box(work_fn=print).fork("3")
    with pytest.raises(sandlock.PolicyTypeError, match="init_fn must be callable"):
        box(init_fn=42, work_fn=print)
    with pytest.raises(sandlock.PolicyValueError, match="max_memory"):
        box(max_memory="64M", work_fn=print).fork(2)
    with pytest.raises(sandlock.PolicyValueError, match="max_processes"):
        box(max_processes=10, work_fn=print).fork(2)
    with pytest.raises(sandlock.PolicyTypeError, match="ForkResult"):
        box().reduce([PY, "-c", SUM_STDIN], [b"1\n"])


CALLER = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import sandlock

def hang(i):
    time.sleep(1000)

clones = sandlock.Sandbox(fs_readable=["/usr"], work_fn=hang).fork(3)
print(" ".join(map(str, clones.pids)), flush=True)
time.sleep(1000)
"""


def test_the_callers_death_ends_the_clones():
    import select
    import subprocess

    here = os.path.dirname(os.path.abspath(sandlock.__file__))
    caller = subprocess.Popen([PY, "-c", CALLER, os.path.dirname(here)],
                              stdout=subprocess.PIPE, env=asan_host(dict(os.environ)))
    try:
        pids = [int(p) for p in caller.stdout.readline().split()]
        assert len(pids) == 3 and all(alive(p) for p in pids)
        pidfds = [os.pidfd_open(p) for p in pids]
    finally:
        caller.kill()
        caller.wait()
        caller.stdout.close()
    try:
        poller = select.poll()
        for fd in pidfds:
            poller.register(fd, select.POLLIN)
        ended = set()
        while len(ended) < 3:  # the bound is for a hang, not a speed check
            ready = poller.poll(30000)
            assert ready, "clones still alive after their caller died"
            for fd, _ in ready:
                ended.add(fd)
                poller.unregister(fd)
    finally:
        for fd in pidfds:
            os.close(fd)
    assert not any(alive(p) for p in pids)


def test_the_callers_buffered_output_is_not_repeated(capfd, monkeypatch):
    import io

    out = io.TextIOWrapper(io.FileIO(os.dup(1), "w"), write_through=False)
    monkeypatch.setattr(sys, "stdout", out)
    print("caller-text", end="")          # still in the buffer at fork time
    with box(init_fn=lambda: None, work_fn=lambda i: None).fork(2) as clones:
        assert all(r.success for r in clones.wait())
    out.flush()
    assert capfd.readouterr().out.count("caller-text") == 1
    out.close()


def test_fork_with_many_fds_open_in_the_caller():
    """Every fd of a fork lands above 1024 here (no select() limit)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("RLIMIT_NOFILE hard limit %d is below 1200" % hard)
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
    try:
        with box(work_fn=print).fork(3) as clones:
            assert [r.stdout for r in clones.wait()] == [b"0\n", b"1\n", b"2\n"]
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_small_max_open_files_still_makes_every_clone():
    with box(max_open_files=16, work_fn=print).fork(40) as clones:
        assert [r.stdout for r in clones.wait()] == [b"%d\n" % i for i in range(40)]


def test_a_clone_can_fork_again_inside_its_confinement():
    def inner(j):
        print("inner", j)

    def work(i):
        sub = sandlock.Sandbox(fs_readable=SYSTEM, work_fn=inner).fork(2)
        print(b"".join(r.stdout for r in sub.wait()).decode(), end="")
        sub.close()

    # confine() counts the template's threads in /proc/self/status.
    with box(fs_readable=SYSTEM + ["/proc"], work_fn=work).fork(2) as clones:
        assert [r.stdout for r in clones.wait()] == [b"inner 0\ninner 1\n"] * 2
