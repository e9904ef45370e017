"""Sandbox(trace=callable): one dict per denial and per handler decision,
the same fields as the CLI's --trace lines.  Each denial is first shown to
work outside the sandbox, then refused inside, and the trace must name it."""
import errno
import logging
import os
import socket
import subprocess
import threading

import pytest

from conftest import PY, SYSTEM
import sandlock
from sandlock.handler import Handler, NotifAction

PROBE = """
import socket, sys
try:
    open(sys.argv[1]).read()
    print('open ok')
except OSError as e:
    print('open', e.errno)
s = socket.socket()
try:
    s.connect(('127.0.0.1', int(sys.argv[2])))
    print('connect ok')
except OSError as e:
    print('connect', e.errno)
"""


@pytest.fixture
def server():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()


@pytest.fixture
def secret(tmpdir_path):
    path = os.path.join(tmpdir_path, "secret.txt")
    with open(path, "w") as f:
        f.write("s3cret")
    return os.path.realpath(path)


def test_trace_reports_a_denied_open_and_a_denied_connect(secret, server):
    # outside the sandbox both work
    with open(secret) as f:
        assert f.read() == "s3cret"
    socket.create_connection(("127.0.0.1", server), timeout=5).close()
    events, threads = [], set()

    def trace(ev):
        events.append(ev)
        threads.add(threading.get_ident())

    sb = sandlock.Sandbox(fs_readable=SYSTEM, net_allow=["127.0.0.1:1"], trace=trace)
    r = sb.run([PY, "-c", PROBE, secret, str(server)])
    assert r.success, r.stderr
    assert r.stdout.decode().split("\n")[:2] == [
        "open %d" % errno.EACCES, "connect %d" % errno.EACCES]
    opens = [e for e in events if e.get("path") == secret]
    assert len(opens) == 1, events
    o = opens[0]
    assert o["event"] == "denied" and o["syscall"] in ("open", "openat")
    assert o["access"] == "read" and o["allow_flag"] == "fs_readable"
    assert o["allow_path"] == os.path.dirname(secret)
    assert secret in o["message"] and "allow with fs_readable" in o["message"]
    conns = [e for e in events if e["syscall"] == "connect"]
    assert len(conns) == 1, events
    c = conns[0]
    assert c["event"] == "denied" and c["by"] == "socket destinations"
    assert c["errno"] == errno.EACCES and c["errno_name"] == "EACCES"
    assert c["pid"] == o["pid"] > 0
    # python3's own start-up files are readable: no event names them
    assert not [e for e in events if e.get("path", "").startswith("/usr/")]
    # called from the supervisor's thread, not the one that called run()
    assert threading.get_ident() not in threads


def test_trace_allowed_accesses_are_silent(secret, server):
    # control: with the file and the port allowed there is nothing to report
    events = []
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [os.path.dirname(secret)],
                          net_allow=["127.0.0.1:%d" % server], trace=events.append)
    r = sb.run([PY, "-c", PROBE, secret, str(server)])
    assert r.stdout.decode().split("\n")[:2] == ["open ok", "connect ok"], r.stderr
    # (python3's start-up may still probe its cwd and PYTHONPATH: those are denied)
    assert [e for e in events if e.get("path") == secret or e["syscall"] == "connect"] == []


def test_trace_reports_handler_decisions():
    class Refuse(Handler):
        def handle(self, ctx):
            return NotifAction.errno(errno.EPERM)

    class Fake(Handler):
        def handle(self, ctx):
            return NotifAction.returns(0)

    events = []
    sb = sandlock.Sandbox(fs_readable=SYSTEM, trace=events.append)
    code = ("import os\n"
            "try: os.mkdir('/tmp/never-made')\n"
            "except OSError as e: print(e.errno)\n"
            "print(os.getppid() == 0)\n")
    r = sb.run_with_handlers([PY, "-c", code], [("mkdir", Refuse()), ("getppid", Fake())])
    assert r.stdout == b"%d\nTrue\n" % errno.EPERM, r.stderr
    mk = [e for e in events if e["syscall"] == "mkdir"]
    assert mk and mk[0]["event"] == "denied" and mk[0]["by"] == "handler"
    assert mk[0]["errno_name"] == "EPERM"
    gp = [e for e in events if e["syscall"] == "getppid"]
    assert gp and gp[0] == {"event": "decision", "syscall": "getppid", "pid": gp[0]["pid"],
                            "by": "handler", "action": "return_value"}


def test_trace_reports_the_filters_own_refusals():
    """ptrace (blocklisted) and a personality flag (an argument rule) are
    refused by the seccomp filter itself; with trace= they reach the trace,
    refused with the same EPERM.  Outside, both calls work."""
    code = ("import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "r = [libc.ptrace(0, 0, 0, 0), libc.personality(0x0040000)]\n"
            "print(*[0 if x >= 0 else ctypes.get_errno() for x in r], "
            "libc.personality(0xffffffff))\n")
    outside = subprocess.run([PY, "-c", code], capture_output=True, text=True).stdout
    assert outside == "0 0 %d\n" % 0x0040000
    events = []
    r = sandlock.Sandbox(fs_readable=SYSTEM, trace=events.append).run([PY, "-c", code])
    assert r.stdout == b"1 1 0\n", r.stderr
    by = {e["syscall"]: e for e in events if e.get("by")}
    assert by["ptrace"]["by"] == "syscall filter" and by["ptrace"]["errno_name"] == "EPERM"
    assert by["personality"]["by"] == "argument rules"
    assert "blocklist" in by["ptrace"]["message"]


def test_trace_exception_is_logged_and_the_run_goes_on(secret, caplog):
    def broken(ev):
        raise RuntimeError("trace bug")

    sb = sandlock.Sandbox(fs_readable=SYSTEM, trace=broken)
    with caplog.at_level(logging.WARNING, logger="sandlock"):
        r = sb.run(["/bin/cat", secret])
        assert r.exit_code == 1 and b"Permission denied" in r.stderr
        ok = sb.run(["/bin/echo", "still fine"])
    assert ok.success and ok.stdout == b"still fine\n"
    assert any("trace callback" in rec.getMessage() and rec.exc_info
               for rec in caplog.records)


def test_trace_on_a_popen_and_reassigned(secret):
    events = []
    sb = sandlock.Sandbox(fs_readable=SYSTEM)
    sb.trace = events.append  # a config field like the others: next run
    with sb.popen(["/bin/cat", secret], stdout=sandlock.StdioMode.NULL) as p:
        p.wait()
    assert [e["path"] for e in events if e.get("path") == secret] == [secret]
    sb.trace = None
    events.clear()
    sb.run(["/bin/cat", secret])
    assert events == []


def test_trace_must_be_callable():
    with pytest.raises(TypeError, match="trace must be a callable"):
        sandlock.Sandbox(trace=5)
    with pytest.raises(sandlock.PolicyError):
        sandlock.Sandbox(trace="print")


def test_confine_refuses_trace():
    # confine() has no supervisor to report anything: refused, not dropped
    with pytest.raises(ValueError, match="trace"):
        sandlock.confine(sandlock.Sandbox(fs_readable=SYSTEM, trace=print))
