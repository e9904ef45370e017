"""Unix sockets bound inside a copy-on-write workdir (issue 20).

Real programs bind a server socket in their project directory (test
suites on ./sock, PostgreSQL's socket dir, tmux, ssh-agent style tools).
Under --workdir DIR the bind makes the socket in the run's view (the COW
layer), never in the real DIR; the sandbox's own processes and threads
reach it; stat, listings and unlink see it; the commit never carries it
over and the run's end leaves nothing on disk.  Hostile probes (each
shown to work outside first) cannot use it to bind or connect a socket
outside the sandbox's grants.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from conftest import PY, REPO, SYSTEM

BUILD = os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build"))
SANDLOCK = os.path.join(BUILD, "sandlock")
NOPTRACE = os.path.join(BUILD, "helpers", "nosysptrace")
READ = SYSTEM + ["/dev/null", "/dev/urandom"]
RO = [a for p in READ for a in ("-r", p)]
ABORT = ["--on-exit", "abort"]


def run(workdir, *cmd, extra=(), cwd=None, under=(), stdin=None, timeout=60):
    return subprocess.run([*under, SANDLOCK, "run", *RO, "--workdir", workdir, *extra, "--",
                           *cmd], cwd=cwd or workdir, capture_output=True, text=True,
                          input=stdin, timeout=timeout)


def listing(d):
    return sorted(os.listdir(d))


@pytest.fixture
def work():
    d = tempfile.mkdtemp(prefix="sandlock-cowunix-", dir="/tmp")
    with open(os.path.join(d, "keep.txt"), "w") as f:
        f.write("real\n")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def outside():
    """A directory no sandbox here is granted."""
    d = tempfile.mkdtemp(prefix="sandlock-cowunix-out-", dir="/tmp")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# A server thread and a client in one program: bind ./sock, serve one
# echo from a thread, connect from the main thread; then what the view
# shows (listing, stat, unlink).
THREAD_ECHO = r"""
import os, socket, stat, sys, threading
p = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen()
def serve():
    c, _ = s.accept()
    c.sendall(c.recv(100).upper())
    c.close()
t = threading.Thread(target=serve)
t.start()
c = socket.socket(socket.AF_UNIX)
c.connect(p)
c.sendall(b"ping")
print(c.recv(100).decode())
t.join()
name = os.path.basename(p)
print(name in os.listdir(os.path.dirname(os.path.abspath(p))), stat.S_ISSOCK(os.stat(p).st_mode),
      oct(os.stat(p).st_mode & 0o777))
print(input())  # the test looks at the real DIR meanwhile
os.unlink(p)
print(name in os.listdir(os.path.dirname(os.path.abspath(p))), os.path.exists(p))
"""


@pytest.mark.parametrize("unlink", [True, False])
def test_a_server_thread_and_a_client_in_one_program(work, outside, unlink):
    """The socket is in the layer only (the real DIR unchanged while it
    is bound); unlinked or not, the run's end leaves nothing in DIR or
    in the staging storage."""
    before = listing(work)
    code = THREAD_ECHO if unlink else THREAD_ECHO.split("os.unlink(p)")[0]
    proc = subprocess.Popen([SANDLOCK, "run", *RO, "--workdir", work, "--fs-storage", outside,
                             "--", PY, "-c", code, "./sock"], cwd=work, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [proc.stdout.readline().strip() for _ in range(2)]
    real_meanwhile = listing(work)
    out, err = proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0, err
    assert lines == ["PING", "True True 0o755"], (lines, err)
    assert real_meanwhile == before
    assert out.split("\n")[:2] == (["go", "False False"] if unlink else ["go", ""]), out
    assert listing(work) == before
    assert os.listdir(outside) == []


def test_the_socket_mode_follows_the_callers_umask(work):
    code = "import os, socket; os.umask(0o077); socket.socket(socket.AF_UNIX).bind('s');" \
           "print(oct(os.stat('s').st_mode & 0o777))"
    r = run(work, PY, "-c", code)
    assert r.stdout.strip() == "0o700", r.stderr


# A server process and a client process started by a shell (`&`).
TWO_PROCS = r"""
%(py)s -c '
import socket
s = socket.socket(socket.AF_UNIX); s.bind("srv.sock"); s.listen()
open("ready", "w").close()
c, _ = s.accept(); c.sendall(c.recv(10) + b"!"); c.close()' &
while [ ! -e ready ]; do sleep 0.01; done
%(py)s -c '
import socket
c = socket.socket(socket.AF_UNIX); c.connect("srv.sock"); c.sendall(b"yo"); print(c.recv(10).decode())'
wait
ls
test -S srv.sock && echo socket
"""


@pytest.mark.parametrize("mode", ["getfd", "nogetfd"])
def test_a_server_process_and_a_client_process(work, mode):
    """Also where pidfd_getfd is refused (a container's default seccomp
    profile): the socket is made like the caller's, bound in the layer,
    installed in its place."""
    under = [NOPTRACE] if mode == "nogetfd" else []
    r = run(work, "/bin/sh", "-c", TWO_PROCS % {"py": PY}, under=under)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["yo!", "keep.txt", "ready", "srv.sock", "socket"], r
    # committed: the plain file, never the socket
    assert listing(work) == ["keep.txt", "ready"]


# bind, connect, sendto and accept from worker threads only.
WORKERS = r"""
import socket, threading
out = {}
def server():
    s = socket.socket(socket.AF_UNIX); s.bind("w.sock"); s.listen()
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("w.dgram")
    out["srv"] = (s, d)
t = threading.Thread(target=server); t.start(); t.join()
def client():
    c = socket.socket(socket.AF_UNIX); c.connect("w.sock"); c.sendall(b"st")
    e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); e.sendto(b"dg", "w.dgram")
t = threading.Thread(target=client); t.start(); t.join()
s, d = out["srv"]
a, _ = s.accept()
print(a.recv(10).decode(), d.recv(10).decode())
"""


@pytest.mark.parametrize("mode", ["getfd", "nogetfd"])
def test_bind_connect_and_send_from_worker_threads(work, mode):
    under = [NOPTRACE] if mode == "nogetfd" else []
    r = run(work, PY, "-c", WORKERS, under=under)
    assert (r.returncode, r.stdout) == (0, "st dg\n"), r.stderr
    assert listing(work) == ["keep.txt"]


def test_a_long_workdir_whose_layer_path_passes_sun_path(work):
    """The guest's path fits in sun_path's 108 bytes; the layer's copy of
    it (storage/upper-*/...) does not: bound through a directory fd."""
    deep = os.path.join(work, "d" * 50, "e" * (104 - len(work) - 54))
    os.makedirs(deep)
    path = os.path.join(deep, "s")
    assert 100 <= len(path) < 108, len(path)
    code = ("import socket, sys; p = sys.argv[1]; s = socket.socket(socket.AF_UNIX); s.bind(p);"
            "s.listen(); c = socket.socket(socket.AF_UNIX); c.connect(p); a, _ = s.accept();"
            "c.send(b'ok'); print(a.recv(2).decode())")
    r = run(deep, PY, "-c", code, path)
    assert (r.returncode, r.stdout) == (0, "ok\n"), r.stderr
    assert os.listdir(deep) == []


def test_commit_carries_files_never_sockets(work):
    """A socket over a deleted real file: the deletion is committed, the
    socket is not; the dry run does not list it either."""
    os.mkdir(os.path.join(work, "run"))
    with open(os.path.join(work, "old"), "w") as f:
        f.write("x")
    code = ("import os, socket; os.unlink('old'); socket.socket(socket.AF_UNIX).bind('old');"
            "socket.socket(socket.AF_UNIX).bind('run/s.sock'); os.mkdir('new');"
            "socket.socket(socket.AF_UNIX).bind('new/s'); open('made', 'w').write('y')")
    dry = run(work, PY, "-c", code, extra=["--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert "sock" not in dry.stdout and "D old" in dry.stdout, dry.stdout
    assert listing(work) == ["keep.txt", "old", "run"]
    r = run(work, PY, "-c", code)
    assert r.returncode == 0, r.stderr
    assert listing(work) == ["keep.txt", "made", "new", "run"]
    assert os.listdir(os.path.join(work, "run")) == []
    assert os.listdir(os.path.join(work, "new")) == []


def test_bind_over_an_existing_name_is_eaddrinuse(work):
    code = ("import os, socket\nfor n in ('keep.txt', 'dangling'):\n"
            "    try: socket.socket(socket.AF_UNIX).bind(n)\n"
            "    except OSError as e: print(e.errno)\n")
    os.symlink("nowhere", os.path.join(work, "dangling"))
    r = run(work, PY, "-c", code)
    assert r.stdout.split() == ["98", "98"], r.stderr


# ---------------------------------------------------------------- hostile

BIND = "import socket, sys\ntry:\n    socket.socket(socket.AF_UNIX).bind(sys.argv[1]); print('bound')\n" \
       "except OSError as e: print('errno', e.errno)\n"
CONNECT = "import socket, sys\ntry:\n    socket.socket(socket.AF_UNIX).connect(sys.argv[1]);" \
          " print('connected')\nexcept OSError as e: print('errno', e.errno)\n"


def bare(code, *args, cwd):
    return subprocess.run([PY, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_a_staged_symlink_out_of_workdir_binds_nothing_outside(work, outside):
    # outside: the probe binds through such a symlink
    os.symlink(outside, os.path.join(work, "bare-link"))
    assert bare(BIND, "bare-link/s", cwd=work) == "bound"
    os.unlink(os.path.join(outside, "s"))
    os.unlink(os.path.join(work, "bare-link"))
    code = "import os; os.symlink(%r, 'lnk')\n" % outside + BIND
    r = run(work, PY, "-c", code, "lnk/s", extra=ABORT)
    assert r.stdout.strip() == "errno 13", r
    assert os.listdir(outside) == []


def test_a_dotdot_path_binds_nothing_outside(work, outside):
    path = os.path.join(work, "..", os.path.basename(outside), "s")
    assert bare(BIND, path, cwd=work) == "bound"
    os.unlink(os.path.join(outside, "s"))
    os.mkdir(os.path.join(work, "sub"))
    r = run(work, PY, "-c", BIND, "sub/../../%s/s" % os.path.basename(outside), extra=ABORT)
    assert r.stdout.strip() == "errno 13", r
    assert os.listdir(outside) == []


def _listener(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(16)
    return s


def test_a_staged_symlink_reaches_no_socket_outside_the_grants(work, outside):
    """A host server's socket outside the grants, and one in the real DIR
    (read-only: reached only with --net-unix-readable): a symlink staged
    in the layer leads to neither."""
    host = _listener(os.path.join(outside, "host.sock"))
    real = _listener(os.path.join(work, "real.sock"))
    try:
        for target in (os.path.join(outside, "host.sock"), "real.sock"):
            os.symlink(target, os.path.join(work, "bare-link"))
            assert bare(CONNECT, "bare-link", cwd=work) == "connected"
            os.unlink(os.path.join(work, "bare-link"))
            code = "import os; os.symlink(%r, 'lnk')\n" % target + CONNECT
            r = run(work, PY, "-c", code, "lnk", extra=ABORT)
            assert r.stdout.strip() == "errno 13", (target, r)
            code = "import os; os.mkdir('sub')\n" + CONNECT
            r = run(work, PY, "-c", code, "sub/../../%s/host.sock" % os.path.basename(outside),
                    extra=ABORT)
            # EACCES, or ENOENT: the real tree has no sub/ to walk through
            assert r.stdout.strip() in ("errno 13", "errno 2"), r
        # the control: where the rules grant the outside socket, the
        # staged symlink leads to it
        code = "import os; os.symlink(%r, 'lnk')\n" % os.path.join(outside, "host.sock") + CONNECT
        r = run(work, PY, "-c", code, "lnk", extra=ABORT + ["-w", outside])
        assert r.stdout.strip() == "connected", r
    finally:
        host.close()
        real.close()


# A thread flips the address buffer between a path in the workdir and one
# outside while the main thread binds from it (ctypes releases the GIL).
RACE = r"""
import ctypes, os, socket, struct, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
inside, outside = sys.argv[1].encode(), sys.argv[2].encode()
def addr(p):
    return struct.pack("H", socket.AF_UNIX) + p + b"\0" * (108 - len(p))
a, b = addr(inside), addr(outside)
buf = ctypes.create_string_buffer(a, len(a))
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, b, len(b))
        ctypes.memmove(buf, a, len(a))
t = threading.Thread(target=flip); t.start()
bound = 0
for i in range(int(sys.argv[3])):
    if len(sys.argv) > 4 and os.path.exists(outside):
        break  # bare: the probe has landed outside
    s = socket.socket(socket.AF_UNIX)
    if libc.bind(s.fileno(), buf, len(a)) == 0:
        bound += 1
        libc.unlink(inside)
    s.close()
stop = True; t.join()
print(bound)
"""


def test_a_racing_thread_cannot_bind_outside(work, outside):
    target = os.path.join(outside, "s")
    # outside: the flipping probe lands binds in the other directory too
    r = bare(RACE, os.path.join(work, "s"), target, "100000", "stop", cwd=work)
    assert os.path.exists(target), r
    os.unlink(target)
    r = run(work, PY, "-c", RACE, os.path.join(work, "s"), target, "300")
    assert r.returncode == 0 and int(r.stdout) > 0, r
    assert (os.listdir(outside), listing(work)) == ([], ["keep.txt"]), r


def test_the_layer_socket_is_not_reached_by_another_sandbox(work):
    """Another run on the same DIR sees the real tree, not this run's layer."""
    proc = subprocess.Popen([SANDLOCK, "run", *RO, "--workdir", work, "--", PY, "-c",
                             "import socket; s = socket.socket(socket.AF_UNIX); s.bind('x.sock');"
                             "s.listen(); print('up', flush=True); input()"],
                            cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        r = run(work, PY, "-c", CONNECT, "x.sock")
        assert r.stdout.strip() == "errno 2", r
    finally:
        proc.communicate("\n", timeout=60)
    assert listing(work) == ["keep.txt"]


def test_a_killed_run_leaves_its_socket_to_the_next_runs_sweep(work, outside):
    """kill -9 of the caller while a socket is bound in the layer: the
    real DIR never saw it, and the next run on that storage removes the
    dead run's layer, socket and all."""
    proc = subprocess.Popen([SANDLOCK, "run", *RO, "--workdir", work, "--fs-storage", outside,
                             "--", PY, "-c",
                             "import socket, time; s = socket.socket(socket.AF_UNIX);"
                             "s.bind('k.sock'); s.listen(); print('up', flush=True);"
                             "time.sleep(60)"],
                            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert os.listdir(outside) != []  # the live layer
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert listing(work) == ["keep.txt"]
    r = run(work, "/bin/true", extra=["--fs-storage", outside])
    assert r.returncode == 0, r.stderr
    assert os.listdir(outside) == []
