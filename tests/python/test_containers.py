"""sandlock under a container's default seccomp profile, without a container.

Docker's and Kubernetes' RuntimeDefault profiles allow ptrace,
process_vm_readv/writev, pidfd_getfd and kcmp only with CAP_SYS_PTRACE,
which a container does not get by default.  build/helpers/nosysptrace
installs a filter that answers EPERM for exactly those and runs the CLI
under it, so every sandbox it starts lives under that filter too.  The
real-container suite (podman, four configurations) is `make
test-containers` (tests/containers/).
"""
import ctypes
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = str(BUILD / "sandlock")
NOPTRACE = str(BUILD / "helpers" / "nosysptrace")
SYS_RO = [a for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)
          for a in ("-r", d)]
PY = "/usr/bin/python3"

# pidfd_getfd on ourselves: allowed by ptrace's rules, so only a seccomp
# filter can refuse it.  Prints the errno name, or "ok".
GETFD_PROBE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
pfd = os.pidfd_open(os.getpid())
r = libc.syscall(438, pfd, pfd, 0)
print("ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
"""


def under_filter(*args, timeout=60):
    return subprocess.run([NOPTRACE, *args], capture_output=True, text=True,
                          timeout=timeout)


def test_the_filter_refuses_pidfd_getfd():
    """The control: the probe works bare and is refused under the filter."""
    bare = subprocess.run([PY, "-c", GETFD_PROBE], capture_output=True, text=True)
    assert bare.stdout.strip() == "ok", bare
    r = under_filter(PY, "-c", GETFD_PROBE)
    assert r.stdout.strip() == "EPERM", r


def test_a_run_starts_without_pidfd_getfd():
    """The listener reaches the supervisor without pidfd_getfd (it failed
    with 'sandlock: pidfd_getfd: EPERM', exit 125)."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", "/bin/echo", "hi")
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\n", "")


def test_many_runs_in_a_row():
    """The hand-over helper is reaped each time: nothing left behind."""
    script = "for i in 1 2 3 4 5 6 7 8; do %s run %s -- /bin/true || exit 1; done" % (
        SANDLOCK, " ".join(SYS_RO))
    r = under_filter("/bin/sh", "-c", script)
    assert r.returncode == 0, r


def test_the_program_sees_no_extra_child():
    """The helper that carried the listener is gone before the program runs:
    its only children are its own."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/proc", "--", "/bin/sh", "-c",
                     "cat /proc/$$/task/$$/children; echo; echo end")
    assert r.returncode == 0, r
    kids = r.stdout.split()
    assert kids[-1] == "end" and len(kids) == 2, r.stdout  # cat itself, nothing else


def test_proc_listing_is_served_on_behalf():
    """getdents on behalf (the /proc filter) works on a reopened directory
    installed back at the caller's fd (it failed with EPERM)."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/proc", "--", "/bin/sh", "-c",
                     "ls /proc | grep -c '^[0-9]'; echo $$")
    assert r.returncode == 0, r
    count, pid = r.stdout.split()
    assert 1 <= int(count) <= 4, r.stdout  # the sandbox's own processes only


def test_cow_listing_and_max_disk(tmp_path):
    """The COW merged listing and max_disk's accounting (on behalf, on the
    caller's offset) under the filter; the write past the limit fails."""
    wd = tmp_path / "wd"
    (wd / "d").mkdir(parents=True)
    (wd / "d" / "a").write_text("a\n")
    script = ("echo one > d/b && echo two >> d/b && ls d && cat d/b && "
              "head -c 3000000 /dev/zero > big; echo status=$?")
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/dev", "-w", str(wd),
                     "--workdir", str(wd), "--max-disk", "1M", "--cwd", str(wd), "--",
                     "/bin/sh", "-c", script)
    assert r.stdout.split() == ["a", "b", "one", "two", "status=1"], r
    assert "No space left on device" in r.stderr
    assert (wd / "d" / "b").read_text() == "one\ntwo\n"
    assert (wd / "big").stat().st_size <= 1 << 20


def test_file_denial_still_holds(tmp_path):
    """Hostile: a file outside the granted trees, readable bare, stays out."""
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    assert subprocess.run(["/bin/cat", str(secret)], capture_output=True).returncode == 0
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", "/bin/cat", str(secret))
    assert r.returncode != 0 and "s3cret" not in r.stdout, r


def _unix_listener(tmp_path):
    import socket
    path = str(tmp_path / "s")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(8)
    return srv, path


UNIX_PROBE = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
              "try:\n s.connect(sys.argv[1]); print('connected')\n"
              "except OSError as e: print(e.errno)\n")


def test_unix_socket_gate_without_pidfd_getfd(tmp_path):
    """Hostile: the gate still decides: a socket outside the granted trees
    is refused (EACCES), one inside is reached (connected on a socket made
    like the caller's, which replaces it)."""
    srv, path = _unix_listener(tmp_path)
    bare = under_filter(PY, "-c", UNIX_PROBE, path)
    assert bare.stdout.strip() == "connected", bare  # the probe works
    denied = under_filter(SANDLOCK, "run", *SYS_RO, "--", PY, "-c", UNIX_PROBE, path)
    granted = under_filter(SANDLOCK, "run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c",
                           UNIX_PROBE, path)
    srv.close()
    assert denied.stdout.strip() == "13", denied
    assert granted.stdout.strip() == "connected", granted


# A socket set up as programs do (non-blocking by settimeout, close-on-exec
# by default), connected under an IP rule: the replacement keeps its fd
# number, flags and kind, and carries data both ways.
REPLACED = r"""
import fcntl, os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
fd = s.fileno()
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    print("errno", e.errno); sys.exit(0)
s.sendall(b"ping")
print(s.fileno() == fd, s.recv(4).decode(),
      bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK),
      bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC),
      s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM)
"""


def _echo_server():
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                c.sendall(c.recv(4).replace(b"ping", b"pong"))
    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_connect_under_ip_rules_replaces_the_socket():
    srv, port = _echo_server()
    ok = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow", "127.0.0.1:%d" % port, "--",
                      PY, "-c", REPLACED, str(port))
    other = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow", "127.0.0.2:%d" % port,
                         "--", PY, "-c", REPLACED, str(port))
    srv.close()
    assert ok.stdout.split() == ["True", "pong", "True", "True", "True"], ok
    assert other.stdout.split() == ["errno", "13"], other  # hostile: another address


def test_a_socket_with_state_is_not_remade(tmp_path):
    """A bound unix socket's bind cannot be carried over: refused (EPERM),
    never connected without it."""
    srv, path = _unix_listener(tmp_path)
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[2])\n"
             "try:\n s.connect(sys.argv[1]); print('connected')\n"
             "except OSError as e: print(e.errno)\n")
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c", probe, path]
    granted = subprocess.run([SANDLOCK, *args[:-1], path, str(tmp_path / "c1")],
                             capture_output=True, text=True)
    r = under_filter(SANDLOCK, *args[:-1], path, str(tmp_path / "c2"))
    srv.close()
    assert granted.stdout.strip() == "connected", granted  # works with pidfd_getfd
    assert r.stdout.strip() == "1", r


SENDTO_PROBE = ("import socket,sys\ns=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                "if len(sys.argv) > 2: s.bind(sys.argv[2])\n"
                "try:\n for i in range(3): s.sendto(b'x', sys.argv[1])\n print('sent')\n"
                "except OSError as e: print(e.errno); sys.exit(1)\n")


def _dgram_receiver(path):
    import socket
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.bind(path)
    srv.setblocking(False)
    return srv


def _drain(s):
    n = 0
    while True:
        try:
            s.recv(64)
        except BlockingIOError:
            return n
        n += 1


def test_datagrams_with_an_address_are_sent_on_a_kept_socket(tmp_path):
    """A datagram socket's first send with an address is performed on a
    socket made like it, which then stays in its place and carries the
    later sends (it was refused with EPERM).  Hostile: a socket file
    outside the granted trees is still refused (EACCES), none arrives."""
    path = str(tmp_path / "d")
    srv = _dgram_receiver(path)
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c", SENDTO_PROBE, path]
    granted = subprocess.run([SANDLOCK, *args], capture_output=True, text=True)
    assert granted.stdout.strip() == "sent" and _drain(srv) == 3, granted  # pidfd_getfd
    r = under_filter(SANDLOCK, *args)
    assert r.stdout.strip() == "sent", r
    assert _drain(srv) == 3
    denied = under_filter(SANDLOCK, "run", *SYS_RO, "--", PY, "-c", SENDTO_PROBE, path)
    assert denied.stdout.strip() == "13" and _drain(srv) == 0, denied
    srv.close()
    # The rules refused it (EACCES), not the missing pidfd_getfd: the end
    # of the run names the flag that allows it.
    assert "1 send refused by the network rules (first: sendto unix %s); allow the " \
           "destination with --allow-unix %s" % (path, path) in denied.stderr, denied.stderr


def test_a_send_on_a_socket_with_state_is_refused_not_skipped(tmp_path):
    """Hostile: a datagram socket bound before its first send (a unix bind
    the kernel made) cannot be remade with its name: its sends with an
    address are refused (EPERM), never sent unchecked, and the run's end
    says why."""
    path = str(tmp_path / "d")
    srv = _dgram_receiver(path)
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c", SENDTO_PROBE, path,
            str(tmp_path / "me")]
    granted = subprocess.run([SANDLOCK, *args], capture_output=True, text=True)
    assert granted.stdout.strip() == "sent", granted  # works with pidfd_getfd
    _drain(srv)
    (tmp_path / "me").unlink()
    r = under_filter(SANDLOCK, *args)
    assert r.stdout.strip() == "1" and _drain(srv) == 0, r
    srv.close()
    assert "1 send with an address refused (first: sendto unix %s): sandlock cannot check " \
           "them on the program's own socket here: pidfd_getfd is refused" % path \
           in r.stderr, r.stderr


REBIND = r"""
import socket, sys
port, dst = int(sys.argv[1]), int(sys.argv[2])
for i in range(40):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", port))
        s.sendto(b"x", ("127.0.0.1", dst))
    except OSError as e:
        print("round", i, "errno", e.errno); sys.exit(1)
    s.close()
print("ok")
"""


def test_a_closed_kept_socket_frees_its_port():
    """A UDP server restarted in the same sandbox binds its port again: the
    socket sandlock kept for the closed one is swept (no process of the
    sandbox holds it) and the bind tried again; forty rounds also go past
    the sweep made when the number kept doubles.  The bind rules still
    hold: a port they do not grant is refused (EACCES)."""
    import socket
    rx, free = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    rx.bind(("127.0.0.1", 0))
    rx.setblocking(False)
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    dst = str(rx.getsockname()[1])

    def run(bind_rule):
        return under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow", "udp://127.0.0.1:" + dst,
                            "--net-allow-bind", bind_rule, "--", PY, "-c", REBIND, str(port),
                            dst, timeout=120)
    r = run(str(port))
    got = _drain(rx)
    assert r.stdout.strip() == "ok" and got == 40, (r, got)
    denied = run(str(port + 1 if port < 65535 else port - 1))
    rx.close()
    assert denied.stdout.strip() == "round 0 errno 13", denied


def test_a_racing_thread_cannot_send_past_the_rules():
    """Hostile: while the main thread sends datagrams on fd N, a thread
    swaps N between a kept socket and a fresh one, and another flips the
    destination's port between an allowed and a denied one.  Bare, both
    ports get datagrams (the probe works); in the sandbox without
    pidfd_getfd, the allowed port still gets them (the kept socket works
    under the race) and the denied one none."""
    import socket
    ok, bad = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2))
    for s in (ok, bad):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
    ports = [str(s.getsockname()[1]) for s in (ok, bad)]
    race = [str(BUILD / "helpers" / "race_fd"), "sendto", *ports, "1000"]
    # The control: the race wins outside (a few rounds: it needs the two
    # threads to run at once, which a loaded machine does not always give).
    for _ in range(5):
        bare = subprocess.run(race, capture_output=True, text=True, timeout=60)
        got = (_drain(ok), _drain(bad))
        if got[0] > 0 and got[1] > 0:
            break
    assert got[0] > 0 and got[1] > 0, bare
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", str(BUILD / "helpers"), "--net-allow",
                     "udp://127.0.0.1:" + ports[0], "--", *race, timeout=300)
    got_ok, got_bad = _drain(ok), _drain(bad)
    ok.close()
    bad.close()
    assert r.stdout.startswith("reached=") and got_ok > 0, r
    assert got_bad == 0, r


def test_check_reports_the_mechanisms_in_use():
    """`sandlock check` (text and JSON) names the mechanism used for each
    need, and under the filter what is unavailable and how to grant it."""
    import json
    bare = json.loads(subprocess.run([SANDLOCK, "check", "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert bare["mechanisms"]["listener"] == "pidfd_getfd"
    assert bare["mechanisms"]["memory"] == "/proc/PID/mem"
    assert "why" not in bare["mechanisms"]
    r = under_filter(SANDLOCK, "check", "--json")
    m = json.loads(r.stdout)["mechanisms"]
    assert m["listener"].startswith("SCM_RIGHTS"), m
    assert m["files"].startswith("reopened through /proc"), m
    assert m["sockets"].startswith("connect: a socket made like the caller's"), m
    assert "datagram socket's first bind or send" in m["sockets"], m
    assert "pidfd_getfd is refused" in m["why"] and "SYS_PTRACE" in m["why"], m
    text = under_filter(SANDLOCK, "check").stdout
    assert "listener hand-over           SCM_RIGHTS" in text, text
    assert "--cap-add SYS_PTRACE" in text, text


LISTEN = r"""
import socket
s = socket.socket()
try:
    s.listen(1)  # unbound: the kernel would pick a port itself
    print("listening", s.getsockname()[1] > 0)
except OSError as e:
    print("errno", e.errno)
"""


def test_an_unbound_listen_is_refused_not_continued():
    """Hostile: listen(2) on an unbound TCP socket autobinds a port no rule
    granted.  Without the socket its state cannot be read, so the listen
    is refused there (it was continued, and got a port)."""
    bare = under_filter(PY, "-c", LISTEN)
    assert bare.stdout.split() == ["listening", "True"], bare  # the probe works
    fast = subprocess.run([SANDLOCK, "run", *SYS_RO, "--", PY, "-c", LISTEN],
                          capture_output=True, text=True)
    assert fast.stdout.split() == ["errno", "13"], fast  # refused with pidfd_getfd too
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", PY, "-c", LISTEN)
    assert r.stdout.split() == ["errno", "1"], r
    anyport = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow-bind", "*", "--", PY, "-c",
                           LISTEN)
    assert anyport.stdout.split() == ["listening", "True"], anyport


def test_a_staged_program_run_by_a_vfork_shell(tmp_path):
    """dash starts commands with vfork: the exec of a staged program
    rewrites its path in memory the shell shares, so the shell must be
    held and its bytes put back.  Without kcmp (refused with pidfd_getfd)
    the sharing is found with a marker; the shell crashed before
    ('munmap_chunk(): invalid pointer', status 134)."""
    wd = tmp_path / "wd"
    wd.mkdir()
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--workdir", str(wd), "-C", str(wd),
                     "--on-exit", "abort", "--", "/bin/sh", "-c",
                     "mkdir -p b/c && cd b/c && cp /bin/echo e && ./e ran here && ls && echo end")
    assert (r.returncode, r.stdout) == (0, "ran here\ne\nend\n"), r


# ------------------------------------------------------------ name lookups

DNS_QUERY = ("import socket; print(socket.getaddrinfo('fake.test', 80, "
             "proto=socket.IPPROTO_TCP)[0][4][0])")


def _dns_server():
    """A one-name DNS server on 127.0.0.1:53: fake.test A 10.9.8.7."""
    import socket
    import struct
    import threading
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.1)  # the thread sees the close: the port is free for the next test
    try:
        s.bind(("127.0.0.1", 53))
    except OSError as e:
        s.close()
        pytest.skip("127.0.0.1:53 is taken here (%s)" % e)

    def serve():
        while True:
            try:
                q, a = s.recvfrom(512)
            except socket.timeout:
                continue
            except OSError:
                return
            i = 12
            while q[i]:
                i += 1 + q[i]
            qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
            head = q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if qtype == 1 else 0, 0, 0)
            ans = (b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + bytes([10, 9, 8, 7])
                   if qtype == 1 else b"")
            s.sendto(head + q[12:i + 5] + ans, a)
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    return s, th


@pytest.mark.skipif(os.geteuid() != 0, reason="binds port 53 and a private mount of "
                    "/etc/resolv.conf (root only)")
def test_name_lookups_work_without_pidfd_getfd(tmp_path):
    """glibc's resolver sends A and AAAA with sendmmsg, which cannot be
    checked without pidfd_getfd (refused): the sandbox tells it to send
    them one by one (RES_OPTIONS=single-request), so getaddrinfo works
    inside a container, and a resolver the rules do not allow stays
    refused.  /etc/resolv.conf is replaced in a private mount namespace."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    srv, th = _dns_server()

    def lookup(rule, env=()):
        script = ('mount --bind "$1" /etc/resolv.conf && shift && exec "$@"')
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(resolv),
                               NOPTRACE, SANDLOCK, "run", *SYS_RO, "--net-allow", rule,
                               *env, "--", PY, "-c", DNS_QUERY],
                              capture_output=True, text=True, timeout=120)
    try:
        bare = subprocess.run(["unshare", "-m", "sh", "-c",
                               'mount --bind "$1" /etc/resolv.conf && exec "$2" -c "$3"',
                               "sh", str(resolv), PY, DNS_QUERY],
                              capture_output=True, text=True, timeout=60)
        assert bare.stdout.strip() == "10.9.8.7", bare  # the probe works outside
        ok = lookup("udp://127.0.0.1:53")
        assert ok.stdout.strip() == "10.9.8.7", ok
        # Without single-request (an explicit override) glibc sends both
        # queries with sendmmsg on its connected socket: performed on the
        # socket kept in its place (it was refused).
        forced = lookup("udp://127.0.0.1:53", ("--env", "RES_OPTIONS=attempts:1"))
        assert forced.stdout.strip() == "10.9.8.7", forced
        # Hostile: a resolver the rules do not name is still refused.
        other = lookup("udp://127.0.0.2:53")
        assert other.returncode != 0 and "10.9.8.7" not in other.stdout, other
    finally:
        srv.close()
        th.join()


MUSL_RESOLVE = BUILD / "helpers" / "resolve-musl"


@pytest.mark.skipif(os.geteuid() != 0, reason="binds port 53 and a private mount of "
                    "/etc/resolv.conf (root only)")
@pytest.mark.skipif(not MUSL_RESOLVE.exists(), reason="musl-gcc is not installed "
                    "(apt-get install musl-tools): no static musl program to run")
def test_a_static_musl_program_resolves_names_without_pidfd_getfd(tmp_path):
    """musl's resolver (a static binary, as in Alpine-based images) binds
    an unconnected UDP socket, then sends each query with an address: the
    bind is performed on a socket made like it, kept in its place, and the
    sends on that one, each destination checked (both were refused with
    EPERM).  Hostile: a nameserver the rules do not name is refused."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    srv, th = _dns_server()

    def lookup(*cmd):
        script = 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"'
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(resolv), *cmd],
                              capture_output=True, text=True, timeout=120)

    def sandboxed(rule):
        return lookup(NOPTRACE, SANDLOCK, "run", *SYS_RO, "-r", str(BUILD / "helpers"),
                      "--net-allow", rule, "--", str(MUSL_RESOLVE), "fake.test")
    try:
        bare = lookup(str(MUSL_RESOLVE), "fake.test")
        assert bare.stdout.strip() == "10.9.8.7", bare  # the probe works outside
        ok = sandboxed("udp://127.0.0.1:53")
        assert (ok.returncode, ok.stdout.strip()) == (0, "10.9.8.7"), ok
        other = sandboxed("udp://127.0.0.2:53")
        assert other.returncode != 0 and "10.9.8.7" not in other.stdout, other
    finally:
        srv.close()
        th.join()


BIND = ("import socket,sys\ns=socket.socket()\n"
        "try:\n s.bind(('127.0.0.1', 0)); print('bound')\n"
        "except OSError as e: print(e.errno); sys.exit(1)\n")


def test_a_trapped_bind_is_refused_and_explained():
    """With --net-deny-bind sandlock performs binds on the caller's socket:
    where it cannot reach that socket the bind is refused (EPERM), and the
    run's end says why and what grants it."""
    args = ["run", *SYS_RO, "--net-deny-bind", "9", "--", PY, "-c", BIND]
    ok = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
    assert ok.stdout == "bound\n", ok.stderr  # with pidfd_getfd
    r = under_filter(SANDLOCK, *args)
    assert r.returncode == 1 and r.stdout == "1\n", r.stderr
    assert "sandlock performs binds on the program's own socket, which it cannot reach " \
           "here: pidfd_getfd is refused" in r.stderr, r.stderr
