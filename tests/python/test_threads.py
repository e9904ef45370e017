"""Trapped calls made by a non-leader thread (a pthread: Python's
threading) are decided exactly like the main thread's: every mechanism that
looks at the caller's fds, memory, cwd or /proc directory (netdest,
sockdest, the on-behalf opener, the COW view and max_disk, the /proc
views, the chroot, the signals a decision sends) must reach the thread's
process, and never fall through to the real call.

Each guest script runs its probe on the main thread and then on a worker
thread and prints both results: the two lines must agree with what the
sandbox promises (the main thread's answer is the reference)."""
import os
import signal
import socket
import subprocess
import threading

import pytest

import sandlock
from conftest import PY, SYSTEM
from test_cow import work  # noqa: F401 (a fixture)
from test_net import tcp_server  # noqa: F401 (a fixture)
from sandlock import NotifAction
from sandlock.handler import Handler

READ = SYSTEM + ["/dev/null", "/dev/urandom"]

# The probe harness: probe(tag) runs on the main thread (tag "M"), then on
# a worker thread ("T"); each result is one printed line.
HARNESS = r'''
import errno, os, socket, sys, threading
def attempt(f):
    try:
        r = f()
        return "ok" if r is None else str(r)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
%s
print(probe("M"), flush=True)
out = []
t = threading.Thread(target=lambda: out.append(probe("T")))
t.start()
t.join()
print(out[0], flush=True)
'''


def both(box, probe, *args, **kw):
    """[main thread's line, worker thread's line] of probe run in box."""
    r = box.run([PY, "-c", HARNESS % probe] + [str(a) for a in args], **kw)
    lines = r.stdout.decode().splitlines()
    assert r.exit_code == 0 and len(lines) == 2, (r.exit_code, r.stdout, r.stderr)
    return lines


# ---------------- the network ----------------

@pytest.fixture
def udp_sink():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    yield s
    s.close()


CONNECT = r'''
def probe(tag):
    return attempt(lambda: socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close())
'''


def test_connect_from_a_thread_is_decided_by_the_rules(tcp_server):
    p = tcp_server
    ok = sandlock.Sandbox(fs_readable=READ, net_allow=["127.0.0.1:%d" % p], timeout=60)
    assert both(ok, CONNECT, p) == ["ok", "ok"]
    denied = sandlock.Sandbox(fs_readable=READ, net_allow=["127.0.0.2:%d" % p], timeout=60)
    assert both(denied, CONNECT, p) == ["EACCES", "EACCES"]


SENDTO = r'''
def probe(tag):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r = attempt(lambda: s.sendto(tag.encode(), ("127.0.0.1", int(sys.argv[1]))))
    s.close()
    return r
'''


def test_sendto_and_sendmsg_from_a_thread(udp_sink):
    """A UDP sendto with an address rule reaches its peer from a thread, a
    denied one is EACCES from both; sendmsg (with an address) alike."""
    p = udp_sink.getsockname()[1]
    ok = sandlock.Sandbox(fs_readable=READ, net_allow=["udp://127.0.0.1:%d" % p], timeout=60)
    assert both(ok, SENDTO, p) == ["1", "1"]
    udp_sink.settimeout(5)
    assert sorted(udp_sink.recv(16) for _ in range(2)) == [b"M", b"T"]
    msg = SENDTO.replace("s.sendto(tag.encode(), ", "s.sendmsg([tag.encode()], [], 0, ")
    assert both(ok, msg, p) == ["1", "1"]
    assert sorted(udp_sink.recv(16) for _ in range(2)) == [b"M", b"T"]
    denied = sandlock.Sandbox(fs_readable=READ, net_allow=["udp://127.0.0.2:%d" % p], timeout=60)
    assert both(denied, SENDTO, p) == ["EACCES", "EACCES"]


BIND = r'''
def probe(tag):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    r = attempt(lambda: s.bind(("127.0.0.1", int(sys.argv[1]))))
    r += ":" + str(s.getsockname()[1])
    s.close()
    return r
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bind_from_a_thread_under_port_remap_and_deny():
    """port_remap binds on the caller's behalf (our duplicate of its
    socket): the thread's socket gets the virtual port it asked for; a
    denied port is EACCES from both threads."""
    p = free_port()
    box = sandlock.Sandbox(fs_readable=READ, port_remap=True, net_allow_bind=[str(p)], timeout=60)
    assert both(box, BIND, p) == ["ok:%d" % p] * 2
    deny = sandlock.Sandbox(fs_readable=READ, port_remap=True, net_deny_bind=[str(p)], timeout=60)
    assert both(deny, BIND, p) == ["EACCES:0"] * 2


SIGPIPE_PROBE = r'''
import signal, socket, sys, threading
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
def work():
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    c.recv(1)  # the server closed its end
    for _ in range(50):
        c.sendto(b"x" * 65536, ("127.0.0.1", int(sys.argv[1])))
    print("survived", flush=True)
t = threading.Thread(target=work)
t.start()
t.join()
'''


def test_sigpipe_of_a_send_performed_for_a_thread_kills_the_process():
    """A send netdest performs that fails EPIPE gives the calling thread
    its SIGPIPE, as the kernel would (default action: the process dies)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(2)
    srv.settimeout(30)
    p = srv.getsockname()[1]

    def serve():
        for _ in range(2):
            c, _ = srv.accept()
            c.close()
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        bare = subprocess.run([PY, "-c", SIGPIPE_PROBE, str(p)], capture_output=True, timeout=60)
        assert bare.returncode == -signal.SIGPIPE, bare
        box = sandlock.Sandbox(fs_readable=READ, net_allow=["127.0.0.1:%d" % p], timeout=60)
        r = box.run([PY, "-c", SIGPIPE_PROBE, str(p)])
        assert b"survived" not in r.stdout, r
        assert r.signal == signal.SIGPIPE, (r.exit_code, r.signal, r.stderr)
    finally:
        srv.close()


UNIX = r'''
def probe(tag):
    s = socket.socket(socket.AF_UNIX)
    r = attempt(lambda: s.connect(sys.argv[1]))
    s.close()
    return r
'''


def test_unix_connect_from_a_thread_by_relative_path(work):
    """sockdest resolves a relative unix path against the calling thread's
    cwd (/proc/TID/cwd): allowed by its rule, else refused."""
    path = os.path.join(work, "sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(8)
    try:
        ok = sandlock.Sandbox(fs_readable=READ, net_allow_unix=[path], cwd=work, timeout=60)
        assert both(ok, UNIX, "sock") == ["ok", "ok"]
        other = os.path.join(work, "other")
        open(other, "w").close()
        no = sandlock.Sandbox(fs_readable=READ, net_allow_unix=[other], cwd=work, timeout=60)
        main, thread = both(no, UNIX, "sock")
        assert main != "ok" and thread == main
    finally:
        srv.close()


# ---------------- the opener and /proc ----------------

PROC_SELF = r'''
def probe(tag):
    with open("/proc/self/stat") as f:
        me = f.read().split()[0]
    with open("/proc/thread-self/stat") as f:
        thread = f.read().split()[0]
    with open("/proc/self/status") as f:
        pid = [l.split()[1] for l in f if l.startswith("Pid:")][0]
    return "%s %s %s" % (me == str(os.getpid()), pid == str(os.getpid()),
                         thread == str(threading.get_native_id()))
'''


def test_proc_self_from_a_thread_names_the_process():
    """/proc/self is the thread group (its stat's pid is getpid()), and
    /proc/thread-self the thread, as in the kernel, for a worker thread too
    (the opener rewrites them to the caller's /proc directory)."""
    bare = subprocess.run([PY, "-c", HARNESS % PROC_SELF], capture_output=True, timeout=60)
    assert bare.stdout.decode().splitlines() == ["True True True"] * 2
    box = sandlock.Sandbox(fs_readable=READ + ["/proc"], timeout=60)
    assert both(box, PROC_SELF) == ["True True True"] * 2


PROC_LIST = r'''
def probe(tag):
    pids = [n for n in os.listdir("/proc") if n.isdigit()]
    return "%s %s %d" % (str(os.getpid()) in pids, str(os.getppid()) in pids,
                         len(os.listdir("/proc/self/task")))
'''


def test_proc_listing_from_a_thread_shows_the_sandbox_only():
    """The /proc listing (getdents on the caller's fd) from a thread: its
    own process is there, the launcher outside is hidden; the task list
    of /proc/self has both threads."""
    box = sandlock.Sandbox(fs_readable=READ + ["/proc"], timeout=60)
    main, thread = both(box, PROC_LIST)
    assert main == "True False 1" and thread == "True False 2"


OPEN_RULE = r'''
def probe(tag):
    a = attempt(lambda: open(sys.argv[1]).read().strip())
    b = attempt(lambda: open(sys.argv[2]).read().strip())
    return a + " " + b
'''


def test_open_under_a_deny_rule_from_a_thread(work):
    """A file under an fs_denied carve-out of a readable directory is
    refused, its sibling readable, from both threads."""
    os.mkdir(os.path.join(work, "secret"))
    with open(os.path.join(work, "secret", "key"), "w") as f:
        f.write("KEY\n")
    with open(os.path.join(work, "pub"), "w") as f:
        f.write("PUB\n")
    box = sandlock.Sandbox(fs_readable=READ + [work], fs_denied=[os.path.join(work, "secret")],
                           timeout=60)
    got = both(box, OPEN_RULE, os.path.join(work, "secret", "key"), os.path.join(work, "pub"))
    assert got == ["EACCES PUB"] * 2


# ---------------- the COW workdir ----------------

COW = r'''
def probe(tag):
    out = []
    out.append(attempt(lambda: open("new-" + tag, "w").write("x")))
    out.append(attempt(lambda: os.unlink("gone-" + tag)))
    out.append(attempt(lambda: os.rename("mv-" + tag, "moved-" + tag)))
    out.append(attempt(lambda: os.mkdir("dir-" + tag)))
    out.append(attempt(lambda: open("dir-%s/in" % tag, "w").write("yy")))
    out.append(attempt(lambda: os.stat("new-" + tag).st_size))
    out.append(attempt(lambda: os.stat("gone-" + tag).st_size))
    out.append(attempt(lambda: os.path.exists("moved-" + tag)))
    # listings as the thread sees them: scandir (getdents on an fd) and
    # a listing of an fd opened here
    names = sorted(n for n in os.listdir(".") if n.endswith(tag))
    out.append(",".join(names))
    fd = os.open("dir-" + tag, os.O_RDONLY | os.O_DIRECTORY)
    out.append(",".join(sorted(os.listdir(fd))))
    os.close(fd)
    out.append(attempt(lambda: os.stat("dir-%s/in" % tag).st_size))
    return " ".join(out).replace("-" + tag, "_")
'''


def seed_cow(work):
    for tag in "MT":
        for name in ("gone", "mv", "keep"):
            with open(os.path.join(work, name + "-" + tag), "w") as f:
                f.write("real\n")


def test_cow_view_from_a_thread(work):
    """Under a workdir, creates, unlinks, renames, mkdir, stats and
    listings made by a worker thread see the merged view exactly as the
    main thread does (a listing from a thread once listed the real
    directory: the deleted file back, the created one missing)."""
    seed_cow(work)
    before = sorted(os.listdir(work))
    box = sandlock.Sandbox(fs_readable=READ, workdir=work, cwd=work, on_exit="abort", timeout=60)
    main, thread = both(box, COW)
    want = ("1 ok ok ok 2 1 ENOENT True "
            "dir_,keep_,moved_,new_ in 2")
    assert main == want and thread == want
    assert sorted(os.listdir(work)) == before  # aborted: nothing reached the tree


def test_cow_commit_of_what_a_thread_did(work):
    seed_cow(work)
    box = sandlock.Sandbox(fs_readable=READ, workdir=work, cwd=work, timeout=60)
    both(box, COW)
    assert sorted(os.listdir(work)) == sorted(
        n + "-" + t for t in "MT" for n in ("dir", "keep", "moved", "new"))
    with open(os.path.join(work, "dir-T", "in")) as f:
        assert f.read() == "yy"


MAXDISK = r'''
def probe(tag):
    fd = os.open("big" + tag, os.O_WRONLY | os.O_CREAT, 0o644)
    r = attempt(lambda: os.write(fd, b"x" * 100000))
    r2 = attempt(lambda: os.ftruncate(fd, 10 << 20))
    r3 = attempt(lambda: os.posix_fallocate(fd, 0, 10 << 20))
    os.close(fd)
    return " ".join([r, r2, r3])
'''


def test_cow_max_disk_on_fd_calls_from_a_thread(work):
    """max_disk checks the growing fd calls (cowwrite: our duplicate of the
    caller's fd) made by a thread too: past the limit, ENOSPC."""
    box = sandlock.Sandbox(fs_readable=READ, workdir=work, cwd=work, on_exit="abort",
                           max_disk="1M", timeout=60)
    assert both(box, MAXDISK) == ["100000 ENOSPC ENOSPC"] * 2


EXEC_STAGED = r'''
import subprocess
def probe(tag):
    with open("prog" + tag, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod("prog" + tag, 0o755)
    r = subprocess.run(["./prog" + tag], capture_output=True)
    return r.stdout.decode().strip() + " " + str(r.returncode)
'''


def test_exec_of_a_staged_program_from_a_thread(work):
    """A program the run staged is exec'd (execpath: the host path swapped
    in for the caller's string) from a worker thread's subprocess."""
    box = sandlock.Sandbox(fs_readable=READ, workdir=work, cwd=work, on_exit="abort", timeout=60)
    assert both(box, EXEC_STAGED) == ["ran 0"] * 2
    assert os.listdir(work) == []


EXECV_THREAD = r'''
import os, threading
with open("prog", "w") as f:
    f.write("#!/bin/sh\necho ran $$\n")
os.chmod("prog", 0o755)
print(os.getpid(), flush=True)
t = threading.Thread(target=lambda: os.execv("./prog", ["./prog"]))
t.start()
t.join()
'''


def test_execve_by_a_non_leader_thread_of_a_staged_program(work):
    """execve from a worker thread: the kernel gives the thread the
    leader's pid; the swapped path must still be exec'd and put back."""
    box = sandlock.Sandbox(fs_readable=READ, workdir=work, cwd=work, on_exit="abort", timeout=60)
    r = box.run([PY, "-c", EXECV_THREAD])
    lines = r.stdout.decode().split("\n")
    assert r.exit_code == 0, r
    assert lines[1] == "ran " + lines[0]


# ---------------- the chroot ----------------

CHROOT = r'''
def probe(tag):
    a = attempt(lambda: open("/etc/marker").read().strip())
    b = attempt(lambda: open("marker").read().strip())
    c = attempt(lambda: ",".join(sorted(os.listdir("/etc"))))
    return " ".join([a, b, c])
'''


def test_chroot_opens_from_a_thread(work):
    """Absolute and relative opens and a listing inside a virtual chroot,
    from a worker thread: the rootfs's files, never the host's."""
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "etc"))
    with open(os.path.join(root, "etc", "marker"), "w") as f:
        f.write("inroot\n")
    mounts = {p: p for p in ("/usr", "/lib", "/lib64", "/bin") if os.path.exists(p)}
    box = sandlock.Sandbox(chroot=root, fs_mount=mounts, cwd="/etc", timeout=60)
    assert both(box, CHROOT) == ["inroot inroot marker"] * 2


CHROOT_PATHS = r'''
def probe(tag):
    pid, tid = os.getpid(), threading.get_native_id()
    same = lambda a, b: os.stat(a).st_ino == os.stat(b).st_ino
    r = [attempt(lambda: os.readlink("/proc/self") == str(pid)),
         attempt(lambda: os.readlink("/proc/thread-self") == "%d/task/%d" % (pid, tid)),
         attempt(lambda: os.path.islink("/proc/self")),
         attempt(lambda: same("/proc/self", "/proc/%d" % pid)),
         attempt(lambda: same("/proc/self/status", "/proc/%d/status" % pid)),
         attempt(lambda: same("/proc/thread-self", "/proc/%d/task/%d" % (pid, tid))),
         attempt(lambda: os.access("/proc/self/status", os.R_OK)),
         attempt(lambda: os.chdir("/proc/self") or os.getcwd() == "/proc/%d" % pid),
         attempt(lambda: os.chdir("/etc") or os.getcwd() == "/etc")]
    return " ".join(r)
'''


def test_chroot_paths_from_a_thread_name_its_process(work):
    """Paths a virtual chroot looks up (stat, readlink, access, chdir: the
    chroot builtin, not the opener) from a worker thread: /proc/self is
    the thread's process and /proc/thread-self the thread, as the kernel
    says outside (checked first); readlink of either names the caller,
    never the supervisor."""
    import sys
    outside = subprocess.run([sys.executable, "-c", HARNESS % CHROOT_PATHS], cwd="/etc",
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    yes = " ".join(["True"] * 9)
    assert outside.stdout.decode().splitlines() == [yes] * 2, outside
    root = os.path.join(work, "root")
    for d in ("etc", "proc"):
        os.makedirs(os.path.join(root, d))
    with open(os.path.join(root, "etc", "marker"), "w") as f:
        f.write("inroot\n")
    mounts = {p: p for p in ("/usr", "/lib", "/lib64", "/bin") if os.path.exists(p)}
    box = sandlock.Sandbox(chroot=root, fs_mount=mounts, fs_mount_ro={"/proc": "/proc"},
                           cwd="/etc", timeout=60)
    assert both(box, CHROOT_PATHS) == [yes] * 2


def test_chroot_unreadable_path_is_efault():
    """A path argument at an unmapped address is EFAULT (the kernel's
    answer, outside and in a chroot), not ENAMETOOLONG."""
    import sys
    probe = (r"import ctypes, os; l = ctypes.CDLL(None, use_errno=True); "
             r"print(l.access(ctypes.c_void_p(1), 0), ctypes.get_errno())")
    import errno as E
    out = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.PIPE, timeout=60)
    assert out.stdout.split() == [b"-1", str(E.EFAULT).encode()]
    mounts = {p: p for p in ("/usr", "/lib", "/lib64", "/bin") if os.path.exists(p)}
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        box = sandlock.Sandbox(chroot=root, fs_mount=mounts, timeout=60)
        r = box.run([PY, "-c", probe])
    assert r.stdout.split() == [b"-1", str(E.EFAULT).encode()], r


# ---------------- signals of a decision ----------------

KILL_PROBE = r'''
import os, threading, time
os.setsid()  # out of the sandbox's process group: only the caller's signal reaches it
def work():
    try:
        os.mkdir("/tmp/sandlock-thread-kill-probe")
    except OSError:
        pass
    print("survived", flush=True)
t = threading.Thread(target=work)
t.start()
t.join()
time.sleep(2)
print("main survived", flush=True)
'''


class KillUsr1(Handler):
    def handle(self, ctx):
        return NotifAction.kill(signal.SIGUSR1)


def test_a_kill_decision_on_a_threads_call_kills_its_process():
    """A handler's KILL(SIGUSR1) on a call made by a worker thread signals
    that caller (a thread pidfd), which dies of it even outside the
    sandbox's process group."""
    box = sandlock.Sandbox(fs_readable=READ, timeout=60)
    r = box.run_with_handlers([PY, "-c", KILL_PROBE], [("mkdir", KillUsr1())])
    assert b"survived" not in r.stdout, r
    assert r.killed_by_handler and r.exit_code == 128 + signal.SIGUSR1, r
