"""Network endpoint rules (net_allow / net_deny / bind), end to end.

All traffic goes to servers these tests start on 127.0.0.0/8 or ::1.
Denials are EACCES (README "Network policy")."""
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import sandlock

PY = "/usr/bin/python3"
SYS = ["/usr", "/lib", "/lib64", "/bin", "/etc"]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or Path(__file__).resolve().parents[2] / "build")

PROBE = r'''
import errno, socket, sys

def err(e):
    return errno.errorcode.get(e.errno, str(e)) if e.errno else type(e).__name__

def tcp(host, port, fam=socket.AF_INET):
    s = socket.socket(fam)
    try:
        s.connect((host, int(port)))
        return "ok"
    except OSError as e:
        return err(e)

def udp(host, port, mode):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(5)
        if mode == "connected":
            s.connect((host, int(port)))
            s.send(b"ping")
        else:
            s.sendto(b"ping", (host, int(port)))
        return "ok:" + s.recv(16).decode()
    except OSError as e:
        return err(e)

out = []
for a in sys.argv[1:]:
    kind, *rest = a.split("|")
    if kind == "tcp":
        out.append(tcp(*rest))
    elif kind == "tcp6":
        out.append(tcp(rest[0], rest[1], socket.AF_INET6))
    else:
        out.append(udp(*rest))
print(" ".join(out))
'''


def probe(sb, *checks):
    r = sb.run([PY, "-c", PROBE, *checks])
    assert r.exit_code == 0, r.stderr
    return r.stdout.decode().split()


def outside(*checks):
    import subprocess
    return subprocess.run([PY, "-c", PROBE, *checks], capture_output=True,
                          text=True).stdout.split()


@pytest.fixture
def tcp_server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def udp_echo():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.2)
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            try:
                d, a = s.recvfrom(64)
                s.sendto(b"pong", a)
            except socket.timeout:
                pass

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield s.getsockname()[1]
    stop.set()
    t.join()
    s.close()


def sb(**kw):
    return sandlock.Sandbox(fs_readable=SYS, **kw)


def test_tcp_endpoint_rule(tcp_server):
    p = tcp_server
    checks = ["tcp|127.0.0.1|%d" % p, "tcp|127.0.0.2|%d" % p, "tcp|127.0.0.1|%d" % (p ^ 1)]
    assert outside(*checks)[0] == "ok"
    assert probe(sb(), *checks) == ["EACCES"] * 3
    got = probe(sb(net_allow=["127.0.0.1:%d" % p]), *checks)
    assert got == ["ok", "EACCES", "EACCES"]
    # tcp:// is TCP only, and an IPv4-mapped IPv6 address is the IPv4 host
    got = probe(sb(net_allow=["tcp://127.0.0.1:%d" % p]), "tcp6|::ffff:127.0.0.1|%d" % p,
                "tcp6|::ffff:127.0.0.2|%d" % p)
    assert got == ["ok", "EACCES"]


def test_cidr_containment(tcp_server):
    p = tcp_server
    checks = ["tcp|127.0.0.1|%d" % p, "tcp|127.0.1.1|%d" % p]
    # 127.0.1.1 has no server: ECONNREFUSED proves the connect was let through
    assert probe(sb(net_allow=["127.0.0.0/8:%d" % p]), *checks) == ["ok", "ECONNREFUSED"]
    assert probe(sb(net_allow=["127.0.0.0/24:%d" % p]), *checks) == ["ok", "EACCES"]


def test_ipv6_loopback():
    s = socket.socket(socket.AF_INET6)
    try:
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    s.listen(8)
    p = s.getsockname()[1]
    try:
        assert probe(sb(net_allow=["[::1]:%d" % p]), "tcp6|::1|%d" % p) == ["ok"]
        assert probe(sb(net_allow=["127.0.0.1:%d" % p]), "tcp6|::1|%d" % p) == ["EACCES"]
    finally:
        s.close()


def test_hostname_localhost_resolved_at_build(tcp_server):
    p = tcp_server
    got = probe(sb(net_allow=["localhost:%d" % p]), "tcp|127.0.0.1|%d" % p,
                "tcp|127.0.0.2|%d" % p)
    assert got == ["ok", "EACCES"]


def test_udp_connected_and_unconnected(udp_echo):
    p = udp_echo
    checks = ["udp|127.0.0.1|%d|connected" % p, "udp|127.0.0.1|%d|sendto" % p,
              "udp|127.0.0.2|%d|sendto" % p]
    assert outside(*checks)[:2] == ["ok:pong", "ok:pong"]
    # no UDP rule: UDP sockets cannot even be created (protocol gating)
    assert probe(sb(net_allow=["tcp://127.0.0.1:%d" % p]), *checks) == ["EPERM"] * 3
    got = probe(sb(net_allow=["udp://127.0.0.1:%d" % p]), *checks)
    assert got == ["ok:pong", "ok:pong", "EACCES"]
    # a scheme-less rule covers UDP too
    got = probe(sb(net_allow=["127.0.0.1:%d" % p]), *checks)
    assert got == ["ok:pong", "ok:pong", "EACCES"]


def test_net_deny_is_default_allow(tcp_server, udp_echo):
    checks = ["tcp|127.0.0.1|%d" % tcp_server, "tcp|127.0.0.2|%d" % tcp_server,
              "udp|127.0.0.1|%d|sendto" % udp_echo]
    assert probe(sb(net_deny=["127.0.0.2"]), *checks) == ["ok", "EACCES", "ok:pong"]
    assert probe(sb(net_deny=["udp://127.0.0.0/8"]), *checks) == ["ok", "ECONNREFUSED",
                                                                   "EACCES"]
    with pytest.raises(ValueError, match="hostnames"):
        sb(net_deny=["localhost"])
    with pytest.raises(sandlock.SandlockError, match="mutually exclusive"):
        sb(net_allow=["127.0.0.1"], net_deny=["10.0.0.0/8"])


SENDMMSG = r'''
import ctypes, errno, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
ports = [int(p) for p in sys.argv[1:]]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
data = ctypes.create_string_buffer(b"ping")
vec = (mmsghdr * len(ports))()
keep = []
for i, p in enumerate(ports):
    sa = ctypes.create_string_buffer(struct.pack("!HH4s8x", socket.AF_INET, p,
                                                 socket.inet_aton("127.0.0.1")))
    sa[0:2] = struct.pack("=H", socket.AF_INET)
    io = iovec(ctypes.cast(data, ctypes.c_void_p), 4)
    keep += [sa, io]
    vec[i].hdr = msghdr(ctypes.cast(sa, ctypes.c_void_p), 16, ctypes.pointer(io), 1, None, 0, 0)
n = libc.sendmmsg(s.fileno(), vec, len(ports), 0)
e = ctypes.get_errno()
print(n, errno.errorcode.get(e, "0") if n < 0 else ",".join(str(vec[i].len) for i in range(max(n, 0))))
'''


def test_sendmmsg_checks_every_destination(udp_echo):
    ok = udp_echo
    bad = ok ^ 1
    box = sb(net_allow=["udp://127.0.0.1:%d" % ok])
    r = box.run([PY, "-c", SENDMMSG, str(ok), str(ok), str(bad), str(ok)])
    assert r.stdout.decode().split() == ["2", "4,4"]  # stops at the denied one
    r = box.run([PY, "-c", SENDMMSG, str(bad), str(ok)])
    assert r.stdout.decode().split() == ["-1", "EACCES"]


NONBLOCK = r'''
import errno, select, socket, sys
s = socket.socket()
s.setblocking(False)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    print("connected")
except BlockingIOError as e:
    print(errno.errorcode[e.errno], end=" ")
    select.select([], [s], [], 5)
    print(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), end=" ")
    s.send(b"x")
    print("sent")
except OSError as e:
    print(errno.errorcode[e.errno])
'''


def test_nonblocking_connect(tcp_server):
    r = sb(net_allow=["tcp://127.0.0.1:%d" % tcp_server]).run(
        [PY, "-c", NONBLOCK, str(tcp_server)])
    # loopback may complete at once; either way the socket works afterwards
    assert r.stdout.decode().strip() in ("EINPROGRESS 0 sent", "connected")
    r = sb(net_allow=["tcp://127.0.0.2:%d" % tcp_server]).run(
        [PY, "-c", NONBLOCK, str(tcp_server)])
    assert r.stdout.decode().strip() == "EACCES"


BIND = r'''
import errno, socket, sys
out = []
for p in sys.argv[1:]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", int(p)))
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode[e.errno])
    s.close()
print(" ".join(out))
'''


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_bind_ranges_and_deny_bind():
    a, b = free_ports(2)
    lo = min(a, b)
    box = sb(net_allow_bind=["%d-%d" % (lo, lo + 1)])
    got = box.run([PY, "-c", BIND, str(lo), str(lo + 1), str(lo + 2)]).stdout.decode().split()
    assert got[:2] == ["ok", "ok"] or "EADDRINUSE" in got[:2]
    assert got[2] == "EACCES"
    box = sb(net_deny_bind=[str(a)])
    got = box.run([PY, "-c", BIND, str(a), str(b)]).stdout.decode().split()
    assert got == ["EACCES", "ok"]
    assert sandlock.parse_ports([80, "443", "8000-8002"]) == [80, 443, 8000, 8001, 8002]
    with pytest.raises(ValueError):
        sandlock.parse_ports(["9-1"])


# ---------------- synthetic /etc/hosts ----------------

HOSTS_PROBE = r'''
import os, socket, sys
def names(text):
    return sorted(n for line in text.splitlines() if line.split()[:1] and not line.startswith("#")
                  for n in line.split()[1:])
out = [",".join(names(open("/etc/hosts").read())),
       ",".join(names(open("/etc/../etc/hosts").read()))]
d = os.open("/etc", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("hosts", os.O_RDONLY, dir_fd=d)
out.append(",".join(names(os.read(fd, 65536).decode())))
for n in sys.argv[1:]:
    try:
        out.append(socket.gethostbyname(n))
    except OSError:
        out.append("unknown")
print(" ".join(out))
'''


def host_names():
    """Names of the host's /etc/hosts other than localhost, that resolve."""
    try:
        text = open("/etc/hosts").read()
    except OSError:
        return []
    seen = []
    for line in text.splitlines():
        f = line.split("#")[0].split()
        for n in f[1:]:
            if n != "localhost" and n not in seen:
                try:
                    socket.getaddrinfo(n, None, socket.AF_INET)
                    seen.append(n)
                except OSError:
                    pass
    return seen


def test_hosts_file_maps_only_the_allowed_names(tcp_server):
    names = host_names()
    if len(names) < 2:
        pytest.skip("the host's /etc/hosts needs two names besides localhost")
    allowed, other = names[0], names[1]
    ip = socket.gethostbyname(allowed)
    # outside, both names resolve from the real file
    assert socket.gethostbyname(other)
    for box in (sb(net_allow=["%s:%d" % (allowed, tcp_server)]),
                sandlock.Sandbox(fs_readable=SYS + ["/proc"],
                                 net_allow=["%s:%d" % (allowed, tcp_server)])):
        r = box.run([PY, "-c", HOSTS_PROBE, allowed, other])
        assert r.exit_code == 0, r.stderr
        seen = r.stdout.decode().split()
        want = ",".join(sorted(["localhost", "localhost", allowed]))
        assert seen[:3] == [want] * 3  # every spelling, a dirfd of /etc too
        assert seen[3:] == [ip, "unknown"]
        # and the pinned address is reachable through the rule
        assert probe(box, "tcp|%s|%d" % (ip, tcp_server)) == ["ok"]


def test_hosts_file_is_the_real_one_without_a_host_rule(tcp_server):
    real = open("/etc/hosts").read()
    for rules in ([], ["127.0.0.1:%d" % tcp_server], ["*:%d" % tcp_server]):
        r = sb(net_allow=rules).run(["/bin/cat", "/etc/hosts"])
        assert r.exit_code == 0, r.stderr
        assert r.stdout.decode() == real


# ---------------- abstract unix sockets ----------------

ABSTRACT = r'''
import errno, os, socket, sys
name, host = sys.argv[1].encode(), sys.argv[2].encode()
out = []
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    srv = socket.socket(socket.AF_UNIX, kind)
    srv.bind(b"\0" + name + str(kind).encode())
    if kind == socket.SOCK_STREAM:
        srv.listen(4)
    pid = os.fork()
    if pid == 0:  # a second process of the sandbox talks to the first
        c = socket.socket(socket.AF_UNIX, kind)
        try:
            if kind == socket.SOCK_STREAM:
                c.connect(b"\0" + name + str(kind).encode())
                c.sendall(b"hi")
            else:
                c.sendto(b"hi", b"\0" + name + str(kind).encode())
            os._exit(0)
        except OSError:
            os._exit(1)
    if kind == socket.SOCK_STREAM:
        conn, _ = srv.accept()
        data = conn.recv(8)
    else:
        srv.settimeout(10)
        data = srv.recv(8)
    _, st = os.waitpid(pid, 0)
    out.append("ok" if data == b"hi" and st == 0 else "fail")
for addr in (b"\0" + host, b"\0sandlock-nobody-" + name):
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(addr)
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print(" ".join(out))
'''


def test_abstract_unix_inside_the_sandbox_only():
    name = "sandlock-py-%d" % os.getpid()
    host = socket.socket(socket.AF_UNIX)
    host.bind(b"\0" + (name + "-host").encode())
    host.listen(4)
    try:
        # the probe works outside: the host listener is reachable there
        out = subprocess.run([PY, "-c", ABSTRACT, name + "-o", name + "-host"],
                             capture_output=True, text=True).stdout.split()
        assert out == ["ok", "ok", "ok", "ECONNREFUSED"]
        r = sb().run([PY, "-c", ABSTRACT, name, name + "-host"])
        assert r.exit_code == 0, r.stderr
        assert r.stdout.decode().split() == ["ok", "ok", "EPERM", "ECONNREFUSED"]
    finally:
        host.close()


# ---------------- port_remap ----------------

REMAP_SERVER = r'''
import os, socket, sys
port, name, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
srv = socket.socket()
srv.bind(("127.0.0.1", port))
srv.listen(8)
c = socket.socket()  # a client of the same sandbox, by the virtual port
c.connect(("127.0.0.1", port))
conn, _ = srv.accept()
seen = [srv.getsockname()[1], conn.getsockname()[1], c.getpeername()[1]]
listening = [int(l.split()[1].split(":")[1], 16) for l in open("/proc/net/tcp").readlines()[1:]
             if l.split()[3] == "0A"]  # st LISTEN
seen.append(",".join(map(str, listening)))
conn.close(), c.close()
with open(out + ".tmp", "w") as f:
    f.write(" ".join(map(str, seen)))
os.rename(out + ".tmp", out)
conn, _ = srv.accept()  # the test, from outside, through ports()
conn.sendall(name.encode())
conn.close()
'''


def wait_for_file(path, box):
    import time
    while not os.path.exists(path):  # a rendezvous, not a measurement
        assert box.is_running, box.wait().stderr
        time.sleep(0.02)
    return open(path).read().split()


def test_port_remap_two_sandboxes_bind_the_same_port(tmpdir_path):
    (v,) = free_ports(1)
    boxes = []
    for name in ("first", "second"):
        box = sandlock.Sandbox(fs_readable=SYS + ["/proc"], fs_writable=[tmpdir_path],
                               port_remap=True,
                               net_allow_bind=[v], net_allow=["127.0.0.1:%d" % v], timeout=60)
        box.spawn([PY, "-c", REMAP_SERVER, str(v), name, os.path.join(tmpdir_path, name)])
        boxes.append((name, box))
    try:
        reals = []
        for name, box in boxes:
            # the guest sees its virtual port everywhere, its own connect to it works
            seen = wait_for_file(os.path.join(tmpdir_path, name), box)
            assert seen[:3] == [str(v)] * 3
            reals.append(box.ports().get(v, v))
            # /proc/net/tcp lists its listener on the virtual port, not the real one
            listening = [int(p) for p in seen[3].split(",")]
            assert v in listening
            assert reals[-1] == v or reals[-1] not in listening
        assert reals[0] != reals[1]  # both hold "v" at once (the second one remapped)
        assert v in reals
        for (name, box), real in zip(boxes, reals):
            s = socket.create_connection(("127.0.0.1", real), timeout=30)
            assert s.recv(16) == name.encode()
            s.close()
            r = box.wait()
            assert r.exit_code == 0, r.stderr
            assert box.ports() == {}
    finally:
        for _, box in boxes:
            if box.is_running:
                box.kill()
                box.wait()


REUSE_BIND_THEN_LISTEN = r"""
import os, socket, sys, time
port, out, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
srv.bind(("127.0.0.1", port))
open(out, "w").close()
while not os.path.exists(go):  # listen only once both have bound
    time.sleep(0.01)
try:
    srv.listen(8)
    print("listening", srv.getsockname()[1], flush=True)
except OSError as e:
    print("listen failed", e.errno, flush=True)
sys.stdin.read()  # the socket stays until the test has both answers
"""


def test_port_remap_reuseaddr_bind_does_not_share_a_port_held_by_another_sandbox(tmpdir_path):
    # Two SO_REUSEADDR sockets may both bind a port neither listens on yet;
    # the second listen() then fails EADDRINUSE.  Shown bare first: two
    # processes doing exactly that collide.
    (v,) = free_ports(1)
    go = os.path.join(tmpdir_path, "go")

    def start(name, argv_prefix):
        out = os.path.join(tmpdir_path, name)
        return out, subprocess.Popen(argv_prefix + [PY, "-c", REUSE_BIND_THEN_LISTEN, str(v),
                                                    out, go], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def both(prefixes):
        procs = []
        for i, prefix in enumerate(prefixes):
            out, p = start("bound%d" % i, prefix)
            while not os.path.exists(out):  # a rendezvous: one binds after the other
                assert p.poll() is None
                time.sleep(0.01)
            procs.append(p)
        open(go, "w").close()
        got = [p.stdout.readline().split() for p in procs]
        for p in procs:
            p.communicate(timeout=60)
        for i in range(len(prefixes)):
            os.unlink(os.path.join(tmpdir_path, "bound%d" % i))
        os.unlink(go)
        return got

    bare = both([[], []])
    assert sorted(g[0] for g in bare) == ["listen", "listening"], bare  # one failed
    cli = [str(BUILD / "sandlock"), "run"] + [a for d in SYS for a in ("-r", d)] + [
        "-w", tmpdir_path, "--port-remap", "--net-allow-bind", str(v), "--"]
    got = both([cli, cli])
    assert [g[0] for g in got] == ["listening", "listening"], got
    assert got[0][1] == got[1][1] == str(v)  # each guest sees its virtual port


def test_port_remap_keeps_the_bind_rules():
    # the bind is the supervisor's under remap: the rules are checked there
    a, b = free_ports(2)
    box = sb(port_remap=True, net_allow_bind=[a])
    got = box.run([PY, "-c", BIND, str(a), str(b)]).stdout.decode().split()
    assert got == ["ok", "EACCES"]
    box = sb(port_remap=True, net_deny_bind=[str(a)])
    got = box.run([PY, "-c", BIND, str(a), str(b)]).stdout.decode().split()
    assert got == ["EACCES", "ok"]


THREADED = r'''
import socket, sys, threading
port = int(sys.argv[1])
got = []
def work():
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        got.append("ok")
    except OSError as e:
        got.append(type(e).__name__)
ts = [threading.Thread(target=work) for _ in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print(" ".join(sorted(got)))
'''


@pytest.mark.parametrize("rule", ["127.0.0.1:%d", "%d"])
def test_connect_from_worker_threads(tcp_server, rule):
    """A connect made by a non-leader thread is decided like one from the
    main thread (Linux >= 6.9 answers pidfd_open(tid) with ENOENT)."""
    p = tcp_server
    r = sb(net_allow=[rule % p]).run([PY, "-c", THREADED, str(p)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.decode().split() == ["ok"] * 8
    denied = sb().run([PY, "-c", THREADED, str(p)])
    assert denied.stdout.decode().split() == ["PermissionError"] * 8


# ---- blocking connects: performed on behalf, waited for off the supervisor thread ----

@pytest.fixture
def stalled_server():
    """A TCP listener whose accept queue is full, so the kernel drops SYNs
    to it and a connect waits (SYN retransmits) until release() accepts;
    and a second listener that accepts at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    port = s.getsockname()[1]
    filler = socket.socket()
    filler.setblocking(False)
    filler.connect_ex(("127.0.0.1", port))
    time.sleep(0.1)  # the handshake is over: the queue is full
    good = socket.socket()
    good.bind(("127.0.0.1", 0))
    good.listen(128)
    stop = threading.Event()

    def accept(l):
        l.settimeout(0.1)
        while not stop.is_set():
            try:
                l.accept()[0].close()
            except OSError:
                pass

    threads = [threading.Thread(target=accept, args=(good,), daemon=True)]
    threads[0].start()

    def release():
        threads.append(threading.Thread(target=accept, args=(s,), daemon=True))
        threads[-1].start()

    yield port, good.getsockname()[1], release
    stop.set()
    for t in threads:
        t.join()
    for x in (s, filler, good):
        x.close()


BLOCKING = r'''
import errno, signal, socket, struct, sys, threading, time
slow, good, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def connect(sndtimeo=0):
    s = socket.socket()  # blocking: no timeout
    if sndtimeo:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", sndtimeo, 0))
    try:
        s.connect(("127.0.0.1", slow))
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

if mode == "others-go-on":
    # a blocking connect waits in one thread; the other's connects go on
    out = []
    t = threading.Thread(target=lambda: out.append("slow:" + connect()), daemon=True)
    t.start()
    time.sleep(0.3)
    for _ in range(20):
        socket.create_connection(("127.0.0.1", good), timeout=10).close()
    out.append("20 fast")
    print(" ".join(out))
elif mode == "sndtimeo":
    print(connect(1))
elif mode == "signal":
    class Alarm(Exception):
        pass
    def alarm(*a):
        raise Alarm()
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(1)
    try:
        print(connect())
    except Alarm:
        print("interrupted")
elif mode == "completes":
    print(connect())
'''


@pytest.mark.parametrize("mode,want", [
    ("others-go-on", "20 fast"),       # the slow connect still waits
    ("sndtimeo", "EINPROGRESS"),       # SO_SNDTIMEO bounds the wait, as in the kernel
    ("signal", "interrupted"),         # a handled signal interrupts it
])
def test_blocking_connect_waits_off_the_supervisor(stalled_server, mode, want):
    """Every connect is performed on the supervisor's duplicate of the
    socket (never continued: a racing thread could swap the fd); a
    blocking caller waits for the handshake without holding up the
    sandbox, and sees the kernel's SO_SNDTIMEO and signal behaviour."""
    slow, good, _ = stalled_server
    args = [PY, "-c", BLOCKING, str(slow), str(good), mode]
    bare = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert bare.stdout.strip() == want, bare.stderr
    for rules in (["%d" % slow, "%d" % good],
                  ["tcp://127.0.0.1:%d" % slow, "tcp://127.0.0.1:%d" % good]):
        r = sb(net_allow=rules).run(args, timeout=60)
        assert r.stdout.decode().strip() == want, r.stderr


def test_blocking_connect_completes_once_accepted(stalled_server):
    slow, good, release = stalled_server
    timer = threading.Timer(1.5, release)
    timer.start()
    try:
        r = sb(net_allow=["%d" % slow]).run(
            [PY, "-c", BLOCKING, str(slow), str(good), "completes"], timeout=60)
    finally:
        timer.cancel()
    assert r.stdout.decode().strip() == "ok", r.stderr


UNIX_BIND = r'''
import errno, os, socket, stat, sys
os.umask(0o027)
out = []
for path in sys.argv[1:]:
    path = path.replace("@", "\0", 1) if path.startswith("@") else path
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(path)
        name = s.getsockname()
        mode = "" if path.startswith("\0") else oct(stat.S_IMODE(os.stat(path).st_mode))
        out.append("ok:%s:%s" % (name if isinstance(name, str) else "abstract", mode))
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print(" ".join(out))
'''


@pytest.mark.parametrize("kw", [{"port_remap": True}, {"net_deny_bind": [9]}],
                         ids=["port_remap", "net_deny_bind"])
def test_unix_bind_performed_on_behalf_as_the_caller(tmp_path, kw):
    """Where bind is trapped, a unix bind is never continued (a racing
    thread could swap a TCP socket in): the opener's confined thread makes
    the socket file from the caller's cwd, with its umask, under
    Landlock's check, and the socket keeps the address as given."""
    work, ro = tmp_path / "w", tmp_path / "ro"
    work.mkdir()
    ro.mkdir()
    args = ["rel.sock", str(work / "abs.sock"), str(ro / "no.sock"), "@sandlock-ab-%d" % os.getpid()]
    bare = subprocess.run([PY, "-c", UNIX_BIND, *args], cwd=work, capture_output=True, text=True)
    for f in ("rel.sock", "abs.sock"):
        (work / f).unlink()
    (ro / "no.sock").unlink()
    assert bare.stdout.split() == ["ok:rel.sock:0o750", "ok:%s:0o750" % (work / "abs.sock"),
                                   "ok:%s:0o750" % (ro / "no.sock"), "ok:abstract:"]
    r = sandlock.Sandbox(fs_readable=SYS + [str(ro)], fs_writable=[str(work)], cwd=str(work),
                         **kw).run([PY, "-c", UNIX_BIND, *args])
    assert r.stdout.decode().split() == bare.stdout.split()[:2] + ["EACCES", "ok:abstract:"], \
        r.stderr
    assert not (ro / "no.sock").exists()


UDP_BIND = BIND.replace("socket.socket()", "socket.socket(socket.AF_INET, socket.SOCK_DGRAM)")


def test_udp_bind_follows_the_bind_rules():
    """A UDP socket bound to a port is a server reachable from outside:
    held to the bind rules like TCP (Landlock has no UDP rule; the
    reference leaves UDP binds open).  Port 0 binds no more than a first
    sendto would: always allowed."""
    a, b = free_ports(2)
    args = [PY, "-c", UDP_BIND, str(a), str(b), "0"]
    bare = subprocess.run(args, capture_output=True, text=True)
    assert bare.stdout.split() == ["ok", "ok", "ok"]
    udp = ["udp://127.0.0.1:9"]  # opens the UDP gate: UDP sockets may exist
    for kw, want in (({}, ["EACCES", "EACCES", "ok"]),
                     ({"net_allow_bind": [a]}, ["ok", "EACCES", "ok"]),
                     ({"net_deny_bind": [b]}, ["ok", "EACCES", "ok"]),
                     ({"net_allow_bind": ["*"]}, ["ok", "ok", "ok"])):
        r = sb(net_allow=udp, **kw).run(args)
        assert r.stdout.decode().split() == want, (kw, r.stderr)


NETVIEW = r'''
import json, socket, subprocess
out = {"names": [n for _, n in socket.if_nameindex()],
       "gai": socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)[0][4][0]}
ip = subprocess.run(["/usr/sbin/ip", "addr"], capture_output=True, text=True)
out["ip"] = ip.stdout
add = subprocess.run(["/usr/sbin/ip", "addr", "add", "10.9.9.9/32", "dev", "lo"],
                     capture_output=True, text=True)
out["add"] = add.returncode
print(json.dumps(out))
'''


def host_view():
    import json as _json
    return _json.loads(subprocess.run([PY, "-c", NETVIEW.replace(
        '["/usr/sbin/ip", "addr", "add", "10.9.9.9/32", "dev", "lo"]', '["true"]')],
        capture_output=True, text=True).stdout)


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/sbin/ip"),
                    reason="the view needs CAP_SYS_ADMIN (root), and iproute2")
def test_netlink_shows_a_loopback_view():
    """NETLINK_ROUTE dumps list the host's interfaces, addresses and MACs:
    the guest's netlink sockets are made in a namespace of loopback only
    (with documentation addresses for AI_ADDRCONFIG), and stay real
    kernel sockets (if_nameindex, getaddrinfo, ip work); changes through
    them are refused (the guest has no CAP_NET_ADMIN there either)."""
    import json as _json
    host = host_view()
    others = [n for n in host["names"] if n != "lo"]
    if not others:
        pytest.skip("this host has no interface but lo: nothing to hide")
    assert all(n in host["ip"] for n in others)  # the control: visible outside
    r = sb().run([PY, "-c", NETVIEW])
    assert r.exit_code == 0, r.stderr
    view = _json.loads(r.stdout.decode())
    assert view["names"] == ["lo"]
    assert view["gai"] == "127.0.0.1"
    assert not any(n in view["ip"] for n in others)
    for line in host["ip"].splitlines():  # no host address or MAC either
        words = line.split()
        if words and words[0] in ("inet", "inet6", "link/ether") and \
                not words[1].startswith(("127.", "::1", "00:00:00:00:00:00")):
            assert words[1] not in view["ip"], words[1]
    assert "192.0.2.1" in view["ip"]
    assert view["add"] != 0
    # granted: the host's view
    granted = sb(net_host_interfaces=True).run([PY, "-c", NETVIEW])
    names = _json.loads(granted.stdout.decode())["names"]
    # (a container engine on the host may add or drop a veth meanwhile)
    assert names in (host["names"], host_view()["names"]), granted.stderr
    # an unprivileged sandlock: the view is made in a user namespace its
    # uid owns, where changes must still be refused
    setpriv = "/usr/bin/setpriv"
    if os.path.exists(setpriv):
        r = subprocess.run([setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups",
                            "--", str(BUILD / "sandlock"), "run", *[a for d in SYS
                                                                   for a in ("-r", d)],
                            "--", PY, "-c", NETVIEW], capture_output=True, text=True,
                           cwd="/", timeout=60)
        view = _json.loads(r.stdout or "{}")
        assert view.get("names") == ["lo"], r.stderr
        assert view["add"] != 0 and not any(n in view["ip"] for n in others)
