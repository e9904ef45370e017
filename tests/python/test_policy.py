"""policy_fn from Python: SyscallEvent / PolicyContext on real processes."""
import errno
import os
import socket
import threading
import time

import pytest

import sandlock
from conftest import PY, SYSTEM, alive


def _box(policy, **kw):
    kw.setdefault("fs_readable", SYSTEM)
    kw.setdefault("fs_writable", ["/dev/null"])
    return sandlock.Sandbox(policy_fn=policy, timeout=60, **kw)


def _listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s, s.getsockname()[1]


def test_exec_refused_by_argv():
    seen = []

    def policy(ev, ctx):
        if ev.argv is not None:
            seen.append(ev.argv)
        return ev.syscall == "execve" and ev.argv_contains("MARK-DENY")

    # The marker is built by the shell so the shell's own argv lacks it.
    r = _box(policy).run(["/bin/sh", "-c",
                          "M=MARK; %s -c 'print(1)' $M-DENY; echo rc=$?; %s -c 'print(2)'"
                          % (PY, PY)])
    assert r.stdout == b"rc=126\n2\n"
    assert (PY, "-c", "print(1)", "MARK-DENY") in seen
    assert (PY, "-c", "print(2)") in seen
    assert seen[0][0] == "/bin/sh"


def test_connect_refused_by_address():
    la, pa = _listener()
    lb, pb = _listener()
    events = []

    def policy(ev, ctx):
        if ev.category == "network":
            events.append((ev.syscall, ev.host, ev.port, ev.path))
            if ev.port == pb:
                return errno.EHOSTUNREACH
        return 0

    code = ("import socket\n"
            "for p in (%d, %d):\n"
            "    c = socket.socket()\n"
            "    try:\n"
            "        c.connect(('127.0.0.1', p)); print('ok')\n"
            "    except OSError as e:\n"
            "        print('err', e.errno)\n" % (pa, pb))
    try:
        r = _box(policy, net_allow=["127.0.0.1:%d" % pa, "127.0.0.1:%d" % pb]).run(
            [PY, "-c", code])
        accepted = la.accept()[0]  # the allowed connect really reached the server
        accepted.close()
    finally:
        la.close()
        lb.close()
    assert r.stdout == b"ok\nerr %d\n" % errno.EHOSTUNREACH
    assert events == [("connect", "127.0.0.1", pa, None), ("connect", "127.0.0.1", pb, None)]


def test_restrict_network_blocks_later_connects():
    la, pa = _listener()
    results = []

    def policy(ev, ctx):
        if ev.argv_contains("LOCK-NET"):
            ctx.restrict_network([])
        return 0

    code = ("import socket, subprocess\n"
            "def go():\n"
            "    c = socket.socket()\n"
            "    try:\n"
            "        c.connect(('127.0.0.1', %d)); print('ok')\n"
            "    except OSError as e:\n"
            "        print('err', e.errno)\n"
            "go()\n"
            "subprocess.run(['/bin/true', 'LOCK' + '-NET'])\n"
            "go()\n" % pa)
    try:
        r = _box(policy, net_allow=["127.0.0.1:%d" % pa]).run([PY, "-c", code])
    finally:
        la.close()
    assert r.stdout == b"ok\nerr %d\n" % errno.EACCES, (r.stdout, r.stderr, results)


def test_deny_path_at_run_time(tmpdir_path):
    secret = os.path.join(tmpdir_path, "secret")
    with open(secret, "w") as f:
        f.write("s3cret\n")
    link = os.path.join(tmpdir_path, "link")
    os.symlink(secret, link)
    rcs = []

    def policy(ev, ctx):
        if ev.argv_contains("LOCK-NOW"):
            ctx.deny_path(tmpdir_path)
            rcs.append("denied")
        return 0

    r = _box(policy, fs_readable=SYSTEM + [tmpdir_path]).run(
        ["/bin/sh", "-c",
         "cat %s; L=LOCK; /bin/true $L-NOW; cat %s || echo refused; cat %s || echo via-link"
         % (secret, secret, link)])
    assert r.stdout == b"s3cret\nrefused\nvia-link\n"
    assert b"Permission denied" in r.stderr
    assert rcs == ["denied"]


def test_kill_verdict_ends_the_run():
    def policy(ev, ctx):
        if ev.argv_contains("MARK-KILL"):
            return "kill"
        return 0

    sb = _box(policy)
    sb.spawn(["/bin/sh", "-c", "echo before; sleep 30 & M=MARK; /bin/true $M-KILL; echo after"])
    pid = sb.pid
    r = sb.wait(timeout=30)
    assert r.reason == sandlock.ExitReason.KILLED
    assert r.stdout == b"before\n"
    assert not alive(pid)


def test_ctx_kill_ends_the_run():
    def policy(ev, ctx):
        if ev.argv_contains("MARK-KILL"):
            ctx.kill()
        return 0

    r = _box(policy).run(["/bin/sh", "-c", "echo a; M=MARK; /bin/true $M-KILL; echo b"])
    assert r.reason == sandlock.ExitReason.KILLED
    assert r.stdout == b"a\n"


RACE = (
    "import ctypes, threading, time\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "buf = ctypes.create_string_buffer(b'SAFE' b'-ARG', 16)\n"
    "def flip():\n"
    "    time.sleep(0.3)\n"
    "    ctypes.memmove(buf, b'EVIL' b'-ARG', 8)\n"
    "threading.Thread(target=flip).start()\n"
    "argv = (ctypes.c_char_p * 3)(b'/bin/echo', ctypes.cast(buf, ctypes.c_char_p), None)\n"
    "libc.execv(b'/bin/echo', argv)\n"
)


def test_argv_race_cannot_change_what_policy_saw():
    # A second thread rewrites argv while policy_fn looks at it (the callback
    # sleeps long enough for the rewrite).  The C test
    # argv_race_works_without_freeze shows this very race succeeds when the
    # freeze is disabled; here the program must run what policy_fn saw.
    seen = []

    def policy(ev, ctx):
        if ev.argv and ev.argv[0] == "/bin/echo":
            seen.append(ev.argv[1])
            time.sleep(0.8)
        return 0

    r = _box(policy).run([PY, "-c", RACE])
    assert len(seen) == 1
    assert r.stdout == seen[0].encode() + b"\n"  # what ran is what was seen
    assert seen == ["SAFE-ARG"]  # and the rewrite came while policy_fn looked


def test_raising_policy_refuses(capfd):
    def policy(ev, ctx):
        if ev.argv_contains("MARK-RAISE"):
            raise RuntimeError("boom")
        return None

    r = _box(policy).run(["/bin/sh", "-c", "M=MARK; /bin/true $M-RAISE; echo rc=$?"])
    assert r.stdout == b"rc=126\n"
    assert "policy_fn raised" in capfd.readouterr().err


def test_meaningless_verdict_refuses(capfd):
    def policy(ev, ctx):
        return "maybe" if ev.argv_contains("MARK-ODD") else 0

    r = _box(policy).run(["/bin/sh", "-c", "M=MARK; /bin/true $M-ODD; echo rc=$?"])
    assert r.stdout == b"rc=126\n"
    assert "'maybe'" in capfd.readouterr().err


def test_bad_context_input_is_an_error():
    errors = []
    kept = []

    def policy(ev, ctx):
        kept.append(ctx)
        for call in (lambda: ctx.restrict_network(["10.0.0.1", "not-an-ip"]),
                     lambda: ctx.restrict_network("10.0.0.1"),
                     lambda: ctx.deny_path("relative/x"),
                     lambda: ctx.restrict_max_processes(0)):
            try:
                call()
            except (ValueError, TypeError, NotImplementedError) as e:
                errors.append(str(e))
        return 0

    r = _box(policy).run(["/bin/true"])
    assert r.exit_code == 0
    assert any("not-an-ip" in e for e in errors)
    assert any("single str" in e for e in errors)
    assert any("relative/x" in e for e in errors)
    assert any("restrict_max_processes" in e for e in errors)
    with pytest.raises(RuntimeError, match="only valid inside"):
        kept[0].deny_path("/tmp")
    with pytest.raises(TypeError, match="callable"):
        sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=42)
    with pytest.raises(sandlock.PolicyError):
        sandlock.confine(sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=lambda e, c: 0))


def test_a_program_staged_in_a_workdir_cannot_skip_policy_fn(tmp_path):
    """The COW workdir can run a program the guest built (the exec is
    rewritten to the staged file), but with policy_fn every exec must reach
    it first: a staged copy of echo named to be refused stays refused (the
    kernel then finds no such real file).  Without the ordering, the COW
    builtin would have continued the exec before policy_fn saw it."""
    seen = []

    def policy(ev, ctx):
        if ev.argv is not None:
            seen.append(ev.argv[0])
        return ev.syscall == "execve" and bool(ev.argv) and ev.argv[0] == "./evil"

    work = tmp_path / "w"
    work.mkdir()
    r = _box(policy, workdir=str(work), cwd=str(work), on_exit="abort").run(
        ["/bin/sh", "-c", "cp /bin/echo ./evil; ./evil RAN; echo rc=$?"])
    assert b"RAN" not in r.stdout
    assert r.stdout.endswith(b"rc=126\n"), r.stdout
    assert "./evil" in seen
