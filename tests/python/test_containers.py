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
    """A unix socket the kernel bound (binds are not trapped when any port
    may be bound) cannot be carried over: its connect is refused (EPERM),
    never made without the bind.  Where sandlock performs the bind itself
    (listen is checked: the default), the socket it bound is kept until
    its connect, which is made on it."""
    srv, path = _unix_listener(tmp_path)
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[2])\n"
             "try:\n s.connect(sys.argv[1]); print('connected')\n"
             "except OSError as e: print(e.errno)\n")
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--net-allow-bind", "*", "--", PY, "-c",
            probe, path]
    granted = subprocess.run([SANDLOCK, *args, str(tmp_path / "c1")],
                             capture_output=True, text=True)
    r = under_filter(SANDLOCK, *args, str(tmp_path / "c2"))
    kept = under_filter(SANDLOCK, "run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c", probe,
                        path, str(tmp_path / "c3"))
    srv.close()
    assert granted.stdout.strip() == "connected", granted  # works with pidfd_getfd
    assert r.stdout.strip() == "1", r
    assert kept.stdout.strip() == "connected", kept


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
    """Hostile: a datagram socket bound before its first send by the
    kernel (binds are not trapped when any port may be bound and no UDP
    rule exists) cannot be remade with its name: its sends with an
    address are refused (EPERM), never sent unchecked, and the run's end
    says why.  Where binds are trapped (the default) sandlock binds a
    socket of its own, keeps it, and the sends go out on it."""
    path = str(tmp_path / "d")
    srv = _dgram_receiver(path)
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--net-allow-bind", "*", "--", PY, "-c",
            SENDTO_PROBE, path, str(tmp_path / "me")]
    granted = subprocess.run([SANDLOCK, *args], capture_output=True, text=True)
    assert granted.stdout.strip() == "sent", granted  # works with pidfd_getfd
    _drain(srv)
    (tmp_path / "me").unlink()
    kept = under_filter(SANDLOCK, *[a for a in args if a not in ("--net-allow-bind", "*")])
    assert kept.stdout.strip() == "sent" and _drain(srv) == 3, kept
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
    granted.  Without the socket its state cannot be read, so a listen on
    a socket sandlock did not bind is refused there, as Landlock refuses
    that port (it was continued once, and got a port)."""
    bare = under_filter(PY, "-c", LISTEN)
    assert bare.stdout.split() == ["listening", "True"], bare  # the probe works
    fast = subprocess.run([SANDLOCK, "run", *SYS_RO, "--", PY, "-c", LISTEN],
                          capture_output=True, text=True)
    assert fast.stdout.split() == ["errno", "13"], fast  # refused with pidfd_getfd too
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", PY, "-c", LISTEN)
    assert r.stdout.split() == ["errno", "13"], r
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
        "try:\n s.bind(('127.0.0.1', int(sys.argv[1]))); print('bound')\n"
        "except OSError as e: print(e.errno); sys.exit(1)\n")


def test_a_trapped_bind_is_performed_on_a_socket_made_like_the_callers():
    """With --net-deny-bind sandlock performs binds itself.  Without
    pidfd_getfd it makes a socket like the caller's, binds that one and
    installs it in its place: a port the list denies is refused (EACCES),
    another one bound, as with pidfd_getfd (it was refused with EPERM)."""
    port = _free_port()
    for deny, want in ((str(port), "13\n"), ("9", "bound\n")):
        args = ["run", *SYS_RO, "--net-deny-bind", deny, "--", PY, "-c", BIND, str(port)]
        ok = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
        assert ok.stdout == want, ok.stderr  # with pidfd_getfd
        r = under_filter(SANDLOCK, *args)
        assert r.stdout == want, r.stderr


def _free_port(kind=None):
    import socket
    with socket.socket(socket.AF_INET, kind or socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listen_outside(port):
    """Bind and listen on port here: errno, or 0 (the port was free)."""
    import socket
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError as e:
            return e.errno
    return 0


# A real server: http.server (socketserver's allow_reuse_address, so
# SO_REUSEADDR before its bind), one request served, then closed; it
# waits for a line on stdin before it exits.
HTTP_SERVER = str(REPO / "tests" / "containers" / "pysrv.py")


def test_a_server_binds_listens_and_is_reached_from_outside():
    """A TCP server on a port --net-allow-bind grants, without pidfd_getfd:
    its bind is performed on a socket sandlock makes, which is installed
    in its place and kept until the listen, performed on it too; a client
    outside the sandbox reaches it.  sandlock keeps no reference after
    the listen: the server's close frees the port (another listener can
    take it while the sandbox still runs; before the close it cannot: the
    control)."""
    import urllib.request
    port = _free_port()
    p = subprocess.Popen([NOPTRACE, SANDLOCK, "run", *SYS_RO, "-r", HTTP_SERVER,
                          "--net-allow-bind", str(port), "--", PY, HTTP_SERVER, str(port),
                          "--wait"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "serving %d\n" % port, p.stderr.read()
        assert _listen_outside(port) == 98  # EADDRINUSE: the server holds it
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=30) as resp:
            assert resp.read() == b"python served"
        assert p.stdout.readline() == "closed\n"
        assert _listen_outside(port) == 0  # freed by the guest's close
        out, err = p.communicate("\n", timeout=60)
        assert p.returncode == 0, err
    finally:
        p.kill()
        p.wait()


def test_a_server_on_a_port_the_rules_do_not_grant_is_refused():
    """The bind sandlock performs is checked as Landlock checks one: a
    port --net-allow-bind does not grant gets EACCES."""
    port = _free_port()
    other = port + 1 if port < 65535 else port - 1
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow-bind", str(other), "--", PY, "-c",
                     BIND, str(port))
    assert r.stdout == "13\n", r.stderr


# bind, then close without a listen, then a second socket binds the same
# port: the first socket, kept by sandlock until a listen that never
# came, is swept when the second bind finds the port taken.
REBIND_TCP = r"""
import socket, sys
port = int(sys.argv[1])
for i in range(3):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError as e:
        print("round", i, "errno", e.errno); sys.exit(1)
    s.close()
s = socket.socket(); s.bind(("127.0.0.1", port)); s.listen(); s.close()
print("ok")
"""


def test_a_bound_socket_closed_before_its_listen_frees_its_port():
    port = _free_port()
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow-bind", str(port), "--", PY, "-c",
                     REBIND_TCP, str(port))
    assert r.stdout == "ok\n", r.stderr
    assert _listen_outside(port) == 0


# bind, close before any listen (unless "open"), then nothing more: only
# the guest's close, no call sandlock sees.
BIND_AND_WAIT = r"""
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))
if sys.argv[2] != "open":
    s.close()
print("bound", flush=True)
sys.stdin.readline()
"""


def _outside_while_bound(port, how):
    """Run BIND_AND_WAIT without pidfd_getfd; meanwhile, within 3 s, a
    bind+listen here: its errno, or 0."""
    import time
    p = subprocess.Popen([NOPTRACE, SANDLOCK, "run", *SYS_RO, "--net-allow-bind", str(port),
                          "--", PY, "-c", BIND_AND_WAIT, str(port), how],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "bound\n"
        for _ in range(30):  # the sweep's first gap is 0.1 s
            e = _listen_outside(port)
            if e == 0:
                break
            time.sleep(0.1)
        return e
    finally:
        p.communicate("\n", timeout=30)


def test_a_socket_closed_before_its_listen_frees_its_port_during_the_run():
    """Another process binds and listens on the port a sandboxed program
    bound and closed before any listen, while the program still runs:
    sandlock kept its socket for the listen, and a timed sweep lets go of
    it (it held the port until the run ended).  The control: while the
    program keeps its socket open, the port stays taken, as bare."""
    import errno
    port = _free_port()
    assert _outside_while_bound(port, "open") == errno.EADDRINUSE
    assert _outside_while_bound(port, "close") == 0


UNIX_SERVER = r"""
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen()
c = socket.socket(socket.AF_UNIX)
c.connect(path)
a, _ = srv.accept()
c.sendall(b"ping")
print(a.recv(4).decode())
"""


def test_a_unix_socket_server_listens(tmp_path):
    """A unix stream server's listen (trapped where TCP binds are
    checked) is performed on the socket sandlock bound for it; it was
    refused (EPERM) without pidfd_getfd."""
    path = str(tmp_path / "s")
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c",
                     UNIX_SERVER, path)
    assert r.stdout == "ping\n", r.stderr


# Options set before the bind (a server) and before the connect (a
# client): read back after them, they must be what they are bare.  The
# second listener's bind shows IPV6_V6ONLY took effect (a dual-stack
# listener on [::]:PORT would hold 0.0.0.0:PORT too).
OPTIONS = r"""
import socket, sys
S, T, V6 = socket.SOL_SOCKET, socket.IPPROTO_TCP, socket.IPPROTO_IPV6
port = int(sys.argv[1])
def opts(s):
    return [s.getsockopt(S, socket.SO_REUSEADDR) != 0, s.getsockopt(S, socket.SO_KEEPALIVE) != 0,
            s.getsockopt(T, socket.TCP_NODELAY) != 0, s.getsockopt(S, socket.SO_RCVBUF),
            s.getsockopt(S, socket.SO_SNDBUF), s.getsockopt(T, socket.TCP_KEEPIDLE)]
srv = socket.socket(socket.AF_INET6)
for lvl, opt, v in ((S, socket.SO_REUSEADDR, 1), (S, socket.SO_REUSEPORT, 1), (V6, socket.IPV6_V6ONLY, 1),
                    (T, socket.TCP_NODELAY, 1), (S, socket.SO_KEEPALIVE, 1), (S, socket.SO_RCVBUF, 65536),
                    (S, socket.SO_SNDBUF, 32768), (T, socket.TCP_KEEPIDLE, 77)):
    srv.setsockopt(lvl, opt, v)
srv.bind(("::", port))
srv.listen()
print("server", *opts(srv), srv.getsockopt(S, socket.SO_REUSEPORT), srv.getsockopt(V6, socket.IPV6_V6ONLY))
srv4 = socket.socket()
srv4.setsockopt(S, socket.SO_REUSEADDR, 1)
srv4.bind(("0.0.0.0", port))
srv4.listen()
c = socket.socket()
for lvl, opt, v in ((T, socket.TCP_NODELAY, 1), (S, socket.SO_KEEPALIVE, 1), (S, socket.SO_SNDBUF, 16384),
                    (S, socket.SO_RCVBUF, 8192), (T, socket.TCP_KEEPIDLE, 33)):
    c.setsockopt(lvl, opt, v)
c.connect(("127.0.0.1", port))
print("client", *opts(c))
"""


def test_socket_options_set_before_bind_and_connect_carry_over():
    """The options a program set on its socket before the bind or connect
    sandlock performs on a socket of its own (SO_REUSEADDR, SO_REUSEPORT,
    IPV6_V6ONLY, TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE, buffer sizes)
    are set on that one too: the program reads back what it set, and
    IPV6_V6ONLY does what it says (a v4 listener shares the port)."""
    port = _free_port()
    bare = subprocess.run([PY, "-c", OPTIONS, str(port)], capture_output=True, text=True,
                          timeout=60)
    assert bare.stdout.count("True") == 5, bare  # the client sets no SO_REUSEADDR
    args = ["run", *SYS_RO, "--net-allow-bind", str(port), "--net-allow",
            "127.0.0.1:%d" % port, "--", PY, "-c", OPTIONS, str(port)]
    fast = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
    r = under_filter(SANDLOCK, *args)
    assert fast.stdout == bare.stdout, fast.stderr
    assert r.stdout == bare.stdout, r.stderr


# Options set, then binds tried in turn until one works: the options
# read back after it.
OPTS_AFTER_FAIL = r"""
import socket, sys
S, T = socket.SOL_SOCKET, socket.IPPROTO_TCP
s = socket.socket()
s.setsockopt(S, socket.SO_REUSEADDR, 1)
s.setsockopt(T, socket.TCP_NODELAY, 1)
for port in sys.argv[1:]:
    try:
        s.bind(("127.0.0.1", int(port))); print("bound"); break
    except OSError as e:
        print(e.errno)
print(s.getsockopt(S, socket.SO_REUSEADDR) != 0, s.getsockopt(T, socket.TCP_NODELAY) != 0)
"""


def test_socket_options_outlive_a_failed_bind():
    """A server that tries ports in turn keeps its options: a bind refused
    by the rules (EACCES) or failing on a port taken outside (EADDRINUSE)
    left the options noted for the program's socket (they were used up
    by the failed try: the next socket sandlock made had none)."""
    import socket
    port, denied = _free_port(), _free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        args = ["run", *SYS_RO, "--net-allow-bind", "%d,%d" % (port, busy), "--", PY, "-c",
                OPTS_AFTER_FAIL, str(denied), str(busy), str(port)]
        fast = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
        r = under_filter(SANDLOCK, *args)
    assert fast.stdout.split() == ["13", "98", "bound", "True", "True"], fast
    assert r.stdout == fast.stdout, r


# Other ways to one port: an IPv6 socket bound to the IPv4-mapped
# loopback, the IPv6 wildcard (dual-stack), an interface-bound socket
# (SO_BINDTODEVICE), a unix socket swapped in... each a bind of PORT.
BIND_TRICKS = r"""
import socket, sys
port = int(sys.argv[1])
def attempt(family, addr, dev=None):
    s = socket.socket(family)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        if dev:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev)
        s.bind((addr, port))
        s.listen()
        return "ok"
    except OSError as e:
        return str(e.errno)
    finally:
        s.close()
print(attempt(socket.AF_INET6, "::ffff:127.0.0.1"), attempt(socket.AF_INET6, "::"),
      attempt(socket.AF_INET, "127.0.0.1", b"lo"), attempt(socket.AF_INET6, "::1", b"lo"))
"""


def test_other_ways_to_bind_a_denied_port_are_refused():
    """Hostile: an IPv4-mapped IPv6 address, the IPv6 wildcard, a socket
    bound to an interface first (SO_BINDTODEVICE): each binds the port
    bare (the probe works), each is refused (EACCES) in the sandbox
    without pidfd_getfd when the port is not granted, and works when it
    is (the options carried over)."""
    port = _free_port()
    bare = subprocess.run([PY, "-c", BIND_TRICKS, str(port)], capture_output=True, text=True,
                          timeout=60)
    assert bare.stdout.split() == ["ok"] * 4, bare
    other = str(port + 1 if port < 65535 else port - 1)
    for grant, want in ((other, ["13"] * 4), (str(port), ["ok"] * 4)):
        r = under_filter(SANDLOCK, "run", *SYS_RO, "--net-allow-bind", grant, "--", PY, "-c",
                         BIND_TRICKS, str(port))
        assert r.stdout.split() == want, (grant, r)
    denied = under_filter(SANDLOCK, "run", *SYS_RO, "--net-deny-bind", str(port), "--", PY, "-c",
                          BIND_TRICKS, str(port))
    assert denied.stdout.split() == ["13"] * 4, denied


def _race(*args, timeout=300):
    return subprocess.run([str(BUILD / "helpers" / "race_fd"), *args], capture_output=True,
                          text=True, timeout=timeout)


def _race_inside(rule, *args):
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", str(BUILD / "helpers"), *rule, "--",
                     str(BUILD / "helpers" / "race_fd"), *args, timeout=300)
    return dict(kv.split("=") for kv in r.stdout.split()) if r.stdout else r


def test_a_racing_thread_cannot_bind_a_denied_port():
    """Hostile: while the main thread binds a fresh TCP socket, a thread
    flips the port in its sockaddr between a granted and a denied one.
    Bare, both ports get bound (the probe works); in the sandbox without
    pidfd_getfd the granted port still gets bound (sandlock's copy of the
    address is the one bound) and the denied one never."""
    ok, bad = _free_port(), _free_port()
    while bad == ok:
        bad = _free_port()
    for _ in range(5):  # the race needs both threads to run at once
        bare = _race("bindaddr", str(ok), str(bad), "1000")
        got = dict(kv.split("=") for kv in bare.stdout.split())
        if int(got["reached"]) > 0 and int(got["ok"]) > 0:
            break
    assert int(got["reached"]) > 0 and int(got["ok"]) > 0, bare
    for rule in (["--net-allow-bind", str(ok)], ["--net-deny-bind", str(bad)]):
        got = _race_inside(rule, "bindaddr", str(ok), str(bad), "1000")
        assert got["reached"] == "0" and int(got["ok"]) > 0, (rule, got)


def test_a_socket_swapped_behind_the_fd_gets_no_unchecked_bind_or_listen():
    """Hostile: a thread dup2s a unix socket and a TCP socket in turn over
    the fd number a bind or listen names, between sandlock's look at it
    and its install.  Bare the TCP socket gets bound to the port, or
    listens on a port the kernel picked (the probes work); in the sandbox
    without pidfd_getfd neither ever happens: sandlock binds and listens
    on sockets of its own, and whatever was swapped in is replaced."""
    port = _free_port()
    for mode in (["bind", str(port)], ["listen"]):
        for _ in range(5):
            bare = _race(*mode, "2000")
            if int(bare.stdout.split()[0].split("=")[1]) > 0:
                break
        assert int(bare.stdout.split()[0].split("=")[1]) > 0, (mode, bare)
        for rule in (["--net-allow-bind", str(port + 1 if port < 65535 else port - 1)],
                     ["--net-deny-bind", str(port)]):
            got = _race_inside(rule, *mode, "2000")
            assert got["reached"] == "0", (mode, rule, got)


REMAP_SERVER = r"""
import socket, sys
port = int(sys.argv[1])
s = socket.socket()
print(s.getsockname()[1], end=" ")
try:
    s.getpeername()
except OSError as e:
    print(e.errno, end=" ")
s.bind(("127.0.0.1", port))
print(s.getsockname()[1] == port, end=" ")
s.listen()
print(s.getsockname()[1] == port, end=" ")
c = socket.socket()
c.connect(("127.0.0.1", port))
a, _ = s.accept()
print(a.getsockname()[1] == port, c.getpeername()[1] == port)
"""


@pytest.mark.parametrize("kind", ["unix", "netlink"])
def test_a_racing_thread_gets_no_unchecked_udp_bind(kind):
    """Hostile: a thread flips fd N between a unix datagram socket (or a
    route netlink socket) and a fresh UDP one while the main thread binds
    N to a port --net-allow-bind does not grant.  Bare, the UDP socket
    gets the port (the probe works).  Without pidfd_getfd sandlock used to
    continue the bind of a socket it could not remake, and the kernel
    bound whatever was at N by then: thousands of UDP servers on the
    unchecked port in 20 s.  Every bind is now performed on a socket of
    sandlock's (the route socket is the loopback view's, kept since its
    making), never on the UDP one."""
    import socket
    port = _free_port(socket.SOCK_DGRAM)
    for _ in range(5):  # the race needs both threads to run at once
        got = dict(kv.split("=") for kv in _race("udpbind", kind, str(port), "20000",
                                                 "5").stdout.split())
        if int(got["reached"]) > 0:
            break
    assert int(got["reached"]) > 0, got
    other = str(port + 1 if port < 65535 else port - 1)
    got = _race_inside(["--net-allow", "udp://127.0.0.1:53", "--net-allow-bind", other],
                       "udpbind", kind, str(port), "20000", "10")
    assert got["reached"] == "0" and int(got["tries"]) > 0, got


# A bind of each kind of socket a program may make, then what it is for:
# a unix datagram server (path) answering a client bound to an abstract
# name, a seqpacket server, a route socket's dump, a second bind.
BIND_KINDS = r"""
import os, socket, struct, sys
d, out = sys.argv[1], []
def run(name, f):
    try:
        out.append("%s=%s" % (name, f()))
    except OSError as e:
        out.append("%s=errno%d" % (name, e.errno))
def dgram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(d + "/dg")
    c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    c.bind("\0bindkinds-%d" % os.getpid())
    c.sendto(b"hi", d + "/dg")
    data, peer = s.recvfrom(8)
    s.sendto(b"back", peer)
    return data.decode() + c.recv(8).decode()
def seqpacket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(d + "/sq")
    s.listen()
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(d + "/sq")
    a, _ = s.accept()
    c.send(b"pkt")
    return a.recv(8).decode()
def netlink():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.bind((0, 0))
    s.sendto(struct.pack("=LHHLLBxxx", 20, 18, 0x301, 1, 0, 0), (0, 0))  # RTM_GETLINK dump
    return "lo" if b"lo\0" in s.recv(65536) else "nolo"
def twice():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.bind(("127.0.0.1", 0))
for name, f in (("dgram", dgram), ("seqpacket", seqpacket), ("netlink", netlink),
                ("twice", twice)):
    run(name, f)
print(*out)
"""


@pytest.mark.parametrize("rules", [[], ["--net-allow", "udp://127.0.0.1:53", "--net-allow-bind",
                                        "8080"], ["--net-deny-bind", "9999"],
                                   ["--net-host-interfaces", "--net-allow", "udp://127.0.0.1:53"]],
                         ids=["default", "udp", "deny-bind", "host-interfaces"])
def test_binds_of_every_kind_work_without_pidfd_getfd(tmp_path, rules):
    """A unix datagram or seqpacket socket, and a route netlink socket,
    are bound on a socket sandlock makes (or, for the loopback view's
    route sockets, keeps) and installs: the program sees what it sees with
    pidfd_getfd.  Before, a unix datagram socket's later sends, and a
    route socket's bind (`ip` under --net-deny-bind) or its dump request,
    were refused (EPERM).  A second bind gets the kernel's EINVAL."""
    args = ["run", *SYS_RO, "-w", str(tmp_path), *rules, "--", PY, "-c", BIND_KINDS,
            str(tmp_path)]
    fast = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
    for f in tmp_path.iterdir():
        f.unlink()
    r = under_filter(SANDLOCK, *args)
    want = ["dgram=hiback", "seqpacket=pkt", "netlink=lo",
            "twice=errno%d" % (22 if "udp://127.0.0.1:53" in rules else 1)]
    assert fast.stdout.split() == want, fast
    assert r.stdout == fast.stdout, r


@pytest.mark.skipif(not os.path.exists("/usr/sbin/ip"), reason="needs iproute2's ip")
@pytest.mark.parametrize("rules", [["--net-deny-bind", "9999"],
                                   ["--net-host-interfaces", "--net-deny-bind", "9999"]],
                         ids=["view", "host-interfaces"])
def test_ip_works_without_pidfd_getfd(rules):
    """`ip` (iproute2) binds its route socket and sends requests with an
    address: both performed by sandlock on a route socket of the view (or
    of the host, with --net-host-interfaces), and it lists lo (it failed:
    "Cannot bind netlink socket: Operation not permitted").  Hostile: a
    change is still refused, as it is to a program without CAP_NET_ADMIN
    (sandlock makes the host's route socket with its capabilities
    lowered)."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, *rules, "--", "/usr/sbin/ip", "-o", "addr")
    assert r.returncode == 0 and " lo " in r.stdout, r
    add = under_filter(SANDLOCK, "run", *SYS_RO, *rules, "--", "/usr/sbin/ip", "addr", "add",
                       "10.9.9.9/32", "dev", "lo")
    assert add.returncode != 0, add
    assert "10.9.9.9" not in subprocess.run(["/usr/sbin/ip", "addr"], capture_output=True,
                                            text=True).stdout


PING = r"""
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
s.bind(("127.0.0.1", 0))
s.settimeout(5)
s.sendto(struct.pack("!BBHHH", 8, 0, 0, 0, 1) + b"probe", ("127.0.0.1", 0))
print("reply" if s.recv(64)[0] == 0 else "other")
"""


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/unshare") or
                    not os.path.exists("/usr/sbin/ip"),
                    reason="a network namespace whose ping_group_range allows ping sockets "
                           "needs root, unshare and ip")
def test_a_ping_socket_binds_and_pings_without_pidfd_getfd():
    """A ping socket bound, then an echo request sent with an address:
    the bind is performed on a ping socket sandlock makes and keeps, so
    the send goes out on it (it was continued to the kernel, and the
    send on a socket sandlock did not hold was refused: EPERM).  In a
    network namespace of its own, where ping sockets are allowed."""
    script = ("echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range && "
              "/usr/sbin/ip link set lo up && %s -c \"$1\" && %s %s run %s "
              "--net-allow icmp://127.0.0.1 -- %s -c \"$1\"") % (
                  PY, NOPTRACE, SANDLOCK, " ".join(SYS_RO), PY)
    r = subprocess.run(["/usr/bin/unshare", "-n", "/bin/sh", "-c", script, "sh", PING],
                       capture_output=True, text=True, timeout=60)
    if r.returncode and not r.stdout:
        pytest.skip("no network namespace here: %s" % r.stderr.strip())
    assert r.stdout.split() == ["reply", "reply"], r  # bare, then sandboxed


def test_port_remap_without_pidfd_getfd():
    """--port-remap: a port taken outside is bound on another real port,
    and the program sees its virtual one: getsockname after the bind
    (the socket sandlock keeps), after the listen and on the accepted
    connection (names read through sock_diag by the socket's inode),
    getpeername of a client; an unbound socket shows port 0 and has no
    peer (ENOTCONN), as the kernel says."""
    import socket
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = under_filter(SANDLOCK, "run", *SYS_RO, "--port-remap", "--net-allow-bind",
                         str(port), "--net-allow", "127.0.0.1:%d" % port, "--", PY, "-c",
                         REMAP_SERVER, str(port))
    assert r.stdout.split() == ["0", "107", "True", "True", "True", "True"], r


INHERITED_LISTEN = ("import socket, sys\ns = socket.socket(fileno=0)\n"
                    "try:\n s.listen(); print('listening', s.getsockname()[1] == int(sys.argv[1]))\n"
                    "except OSError as e: print('errno', e.errno)\n")


def test_a_listen_on_an_inherited_bound_socket_is_refused_not_moved():
    """A TCP socket bound outside the sandbox (here its stdin) cannot be
    remade with its bind: its listen is refused (EPERM) rather than made
    on a fresh socket, which would listen on a port the kernel picks (it
    did, under a deny list).  With pidfd_getfd it listens on its port."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
        args = ["run", *SYS_RO, "--net-deny-bind", "9", "--", PY, "-c", INHERITED_LISTEN, port]
        fast = subprocess.run([SANDLOCK, *args], stdin=s, capture_output=True, text=True,
                              timeout=60)
        r = subprocess.run([NOPTRACE, SANDLOCK, *args], stdin=s, capture_output=True, text=True,
                           timeout=60)
    assert fast.stdout == "listening True\n", fast
    assert r.stdout == "errno 1\n", r


PORT0_LISTEN = ("import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\n"
                "try:\n s.listen(); print('listening')\n"
                "except OSError as e: print('errno', e.errno)\n")


def test_a_port_zero_bind_cannot_listen_on_a_denied_port():
    """Hostile: with a --net-deny-bind list covering the ephemeral ports,
    bind(port 0) gets one of them (allowed: a client's source port), and
    a listen would make it a server on a denied port.  Bare it listens
    (the probe works); in the sandbox the listen is refused (EACCES), with
    pidfd_getfd and without."""
    lo, hi = open("/proc/sys/net/ipv4/ip_local_port_range").read().split()
    bare = subprocess.run([PY, "-c", PORT0_LISTEN], capture_output=True, text=True, timeout=60)
    assert bare.stdout == "listening\n", bare
    args = ["run", *SYS_RO, "--net-deny-bind", "%s-%s" % (lo, hi), "--", PY, "-c", PORT0_LISTEN]
    fast = subprocess.run([SANDLOCK, *args], capture_output=True, text=True, timeout=60)
    r = under_filter(SANDLOCK, *args)
    assert fast.stdout == "errno 13\n", fast
    assert r.stdout == "errno 13\n", r


GO_SERVER = """package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Args[1])
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	fmt.Println("serving", ln.Addr().(*net.TCPAddr).Port)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from go")
		go ln.Close()
	}))
}
"""


def test_a_go_server_without_pidfd_getfd(tmp_path):
    """A Go net/http server (its own raw syscalls: a non-blocking socket,
    SO_REUSEADDR, bind, listen, getsockname, accept4 under epoll from
    goroutines) on a granted port, reached from outside."""
    import shutil
    import urllib.request
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    (tmp_path / "main.go").write_text(GO_SERVER)
    (tmp_path / "go.mod").write_text("module srv\n\ngo 1.19\n")
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    subprocess.run(["go", "build", "-o", "srv", "."], cwd=tmp_path, env=env, check=True,
                   capture_output=True, timeout=300)
    port = _free_port()
    p = subprocess.Popen([NOPTRACE, SANDLOCK, "run", "-r", str(tmp_path), "--net-allow-bind",
                          str(port), "--", str(tmp_path / "srv"), str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "serving %d\n" % port, p.stderr.read()
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=30) as resp:
            assert resp.read() == b"hello from go"
        assert p.wait(timeout=60) == 0, p.stderr.read()
    finally:
        p.kill()
        p.wait()


REFUSED_OPTIONS = ("import socket\nr = []\n"
                   "for lvl, opt, val in ((socket.IPPROTO_IP, socket.IP_OPTIONS, b'\\x01\\x01\\x01\\x00'),\n"
                   "                      (socket.IPPROTO_TCP, 30, 1)):\n"  # TCP_FASTOPEN_CONNECT
                   "    try:\n        socket.socket().setsockopt(lvl, opt, val); r.append('ok')\n"
                   "    except OSError as e:\n        r.append(str(e.errno))\n"
                   "print(*r)\n")


def test_noting_options_lets_no_refused_option_through():
    """Hostile: setsockopt is trapped without pidfd_getfd (its options are
    noted, the call continued): the filter's argument rules still answer
    first, so IPv4 source routes (IP_OPTIONS) and TCP Fast Open's connect
    option stay refused (EPERM).  Bare both are set (the probe works)."""
    bare = subprocess.run([PY, "-c", REFUSED_OPTIONS], capture_output=True, text=True,
                          timeout=60)
    assert bare.stdout.split() == ["ok", "ok"], bare
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", PY, "-c", REFUSED_OPTIONS)
    assert r.stdout.split() == ["1", "1"], r
