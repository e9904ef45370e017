"""Hostile: the other address forms a bind takes hold the port rules.

The kernel binds a port from two more forms than the plain one: on an
IPv4 socket AF_UNSPEC with INADDR_ANY (inet_bind takes it for AF_INET),
and on an IPv6 one RFC 2133's 24-byte sockaddr_in6 (no sin6_scope_id).
sandlock, which performs every trapped bind itself, read neither's port
(port 0 to its rules): a UDP server bound any port past --net-allow-bind
and --net-deny-bind, and under --port-remap a TCP server took the host's
real port, shared with a socket someone else had bound there.  Each test
first shows the probe does it outside, then runs it with pidfd_getfd and
without (build/helpers/nosysptrace: a container's default profile).
"""
import socket
import subprocess
import time

import pytest

# The container suite's sandlock, nosysptrace, system grants and interpreter.
from test_containers import NOPTRACE, PY, SANDLOCK, SYS_RO

MODES = {"pidfd_getfd": [], "no_pidfd_getfd": [NOPTRACE]}

# argv: KIND (udp4 udp6 tcp4) FORM (plain unspec short6) PORT [listen]:
# prints "bound" or the errno name; a UDP socket then prints the first
# datagram it gets, a TCP one listens ("listening") and waits for stdin.
PROBE = r"""
import ctypes, errno, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
kind, form, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if kind.endswith("6") else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM if kind.startswith("udp") else socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if fam == socket.AF_INET:
    sf = socket.AF_UNSPEC if form == "unspec" else socket.AF_INET
    raw = struct.pack("=H", sf) + struct.pack("!H", port) + bytes(12)
else:
    raw = (struct.pack("=H", fam) + struct.pack("!H", port) + bytes(24))[:24 if form == "short6" else 28]
if libc.bind(s.fileno(), ctypes.create_string_buffer(raw, len(raw)), len(raw)) < 0:
    print(errno.errorcode[ctypes.get_errno()], flush=True)
    sys.exit(1)
print("bound", flush=True)
if kind.startswith("udp"):
    print(s.recv(100).decode(), flush=True)
else:
    s.listen(4)
    print("listening", flush=True)
    sys.stdin.readline()
"""


def _free_port(kind=socket.SOCK_DGRAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _udp_server(prefix, kind, form, port):
    """Run the UDP probe; send it datagrams until it answers: its output."""
    p = subprocess.Popen([*prefix, PY, "-c", PROBE, kind, form, str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dst, fam = (("::1", port), socket.AF_INET6) if kind == "udp6" else (("127.0.0.1", port),
                                                                         socket.AF_INET)
    with socket.socket(fam, socket.SOCK_DGRAM) as c:
        for _ in range(100):
            if p.poll() is not None:
                break
            c.sendto(b"reached", dst)
            time.sleep(0.05)
    if p.poll() is None:
        p.kill()
    out, err = p.communicate(timeout=30)
    return out.split(), err


UDP_FORMS = [("udp4", "unspec"), ("udp6", "short6")]


@pytest.mark.parametrize("kind,form", UDP_FORMS)
def test_the_probe_binds_a_udp_port_outside(kind, form):
    """The control: the kernel binds the port each form names, and a
    datagram sent there arrives."""
    out, err = _udp_server([], kind, form, _free_port())
    assert out == ["bound", "reached"], err


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind,form", UDP_FORMS)
def test_a_udp_bind_in_another_form_meets_the_bind_rules(mode, kind, form):
    """Hostile: a port --net-allow-bind does not grant, or one
    --net-deny-bind names, is refused (EACCES) in every form, as in the
    plain one; the granted port binds (a datagram reaches it)."""
    port, other = _free_port(), _free_port()
    udp = ["--net-allow", "udp://127.0.0.1:53"]
    for rules, want in ((["--net-allow-bind", str(other)], ["EACCES"]),
                        (["--net-deny-bind", str(port)], ["EACCES"]),
                        (["--net-allow-bind", str(port)], ["bound", "reached"])):
        cmd = [*MODES[mode], SANDLOCK, "run", *SYS_RO, *udp, *rules, "--"]
        out, err = _udp_server(cmd, kind, form, port)
        assert out == want, (rules, err)


def _holder(port):
    """A socket outside bound to port with SO_REUSEADDR, not listening yet
    (another sandbox's between its bind and its listen)."""
    h = socket.socket()
    h.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    h.bind(("0.0.0.0", port))
    return h


def _holder_listens_after(prefix):
    """The TCP probe in the AF_UNSPEC form, under prefix, binds and listens
    on a port the holder has bound: may the holder then listen?"""
    port = _free_port(socket.SOCK_STREAM)
    h = _holder(port)
    p = subprocess.Popen([*prefix, PY, "-c", PROBE, "tcp4", "unspec", str(port)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        lines = [p.stdout.readline().strip(), p.stdout.readline().strip()]
        assert lines == ["bound", "listening"], (lines, p.stderr.read())
        try:
            h.listen(1)
            return True
        except OSError:
            return False
    finally:
        h.close()
        out, err = p.communicate("\n", timeout=30)


def test_the_probe_shares_a_bound_port_outside():
    """The control: bare, the AF_UNSPEC form shares the holder's port
    (both SO_REUSEADDR, neither listening) and its listen takes it."""
    assert _holder_listens_after([]) is False


@pytest.mark.parametrize("mode", MODES)
def test_port_remap_maps_a_bind_in_another_form(mode):
    """Hostile: under --port-remap the AF_UNSPEC form is remapped like the
    plain one: the holder's port is not shared, so its listen succeeds."""
    cmd = [*MODES[mode], SANDLOCK, "run", *SYS_RO, "--port-remap",
           "--net-allow-bind", "*", "--"]
    assert _holder_listens_after(cmd) is True
