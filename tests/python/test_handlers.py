"""User handlers end to end: every recipe of the spec with real processes."""
import asyncio
import errno
import gc
import os
import re
import signal
import threading
import weakref

import pytest

import sandlock
from sandlock import _callback, _pin
from sandlock import handler as H
from sandlock.handler import ExceptionPolicy, Handler, NotifAction
from sandlock.presets import (COMMON_PATH_SYSCALLS, AuditPathsHandler, LogSyscallsHandler,
                              PathAllowHandler, PathDenyHandler)
from conftest import PY, SYSTEM


def common(h):
    return [(s, h) for s in COMMON_PATH_SYSCALLS]


@pytest.fixture
def files(tmpdir_path):
    """tmpdir with secret/ok files readable through Landlock."""
    paths = {}
    for name, content in (("secret", "TOPSECRET\n"), ("aaaa.txt", "content-A\n"),
                          ("bbbb.txt", "content-B\n")):
        p = os.path.join(tmpdir_path, name)
        with open(p, "w") as f:
            f.write(content)
        paths[name] = p
    os.mkdir(os.path.join(tmpdir_path, "ok"))
    paths["ok"] = os.path.join(tmpdir_path, "ok", "file")
    with open(paths["ok"], "w") as f:
        f.write("fine\n")
    paths["dir"] = tmpdir_path
    paths["sb"] = sandlock.Sandbox(fs_readable=SYSTEM + [tmpdir_path], timeout=60)
    return paths


# ---- quick start / audit ----
def test_quick_start_audit_prints_paths(sb, host_hostname, capsys):
    audit = AuditPathsHandler(callback=lambda path, _ctx: print("open %s" % path))
    r = sb.run_with_handlers(cmd=["/usr/bin/cat", "/etc/hostname"], handlers=common(audit))
    assert r.success and r.stdout == host_hostname
    out = capsys.readouterr().out.splitlines()
    assert "open /etc/hostname" in out
    assert "open /usr/bin/cat" in out  # the initial execve is trapped too


def test_audit_callback_gets_ctx_and_none(sb):
    seen = []
    audit = AuditPathsHandler(callback=lambda path, ctx: seen.append((path, ctx.syscall_nr, ctx.pid)))
    # getpid is not a path syscall: path is None but the callback still runs
    r = sb.run_with_handlers([PY, "-c", "import os; os.getpid()"], [("getpid", audit)])
    assert r.success, r.stderr
    nr = sandlock._native.syscall_nr("getpid")
    assert seen and all(p is None and n == nr for p, n, _ in seen)


# ---- deny / allow recipes ----
def test_deny_tree_etc(sb):
    deny = PathDenyHandler(deny=["/etc/*", "/var/lib/*"])
    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], common(deny))
    assert r.exit_code != 0 and not r.success
    assert b"Operation not permitted" in r.stderr
    assert r.stdout == b""


def test_deny_custom_errno(files):
    deny = PathDenyHandler(deny=[files["secret"]], errno=errno.ENOENT)
    r = files["sb"].run_with_handlers(["/bin/cat", files["secret"]], common(deny))
    assert b"No such file or directory" in r.stderr and b"TOPSECRET" not in r.stdout


def test_security_denied_path_really_gets_eperm(files):
    """Without the handler each attempt reads the secret (Landlock allows the
    directory); with it every spelling of the path gets EPERM."""
    d, secret = files["dir"], files["secret"]
    attempts = [
        ["/bin/cat", secret],
        ["/bin/cat", d + "//./secret"],
        ["/bin/cat", d + "/ok/../secret"],
        ["/bin/sh", "-c", 'cd "$1" && cat secret', "sh", d],
        ["/bin/sh", "-c", 'cd "$1/ok" && cat ../secret', "sh", d],
        [PY, "-c", "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY);"
                   "print(os.read(os.open('secret', os.O_RDONLY, dir_fd=fd), 99))", d],
    ]
    sb = files["sb"]
    for cmd in attempts:
        ctl = sb.run(cmd)
        assert b"TOPSECRET" in ctl.stdout, (cmd, ctl)
        deny = PathDenyHandler(deny=[secret])
        r = sb.run_with_handlers(cmd, common(deny))
        assert b"TOPSECRET" not in r.stdout, cmd
        assert not r.success, cmd
        assert b"Operation not permitted" in r.stderr or b"PermissionError" in r.stderr, (cmd, r)


def test_deny_on_openat2_open_creat(files):
    """The path presets resolve their argument on openat2/open/creat too."""
    deny = PathDenyHandler(deny=[files["secret"]])
    regs = [(s, deny) for s in ("openat", "openat2", "open", "creat")]
    r = files["sb"].run_with_handlers(["/bin/cat", files["secret"]], regs)
    assert b"Operation not permitted" in r.stderr


def test_allow_list_eacces_for_others(files):
    d = files["dir"]
    allow = PathAllowHandler(allow=["/usr/*", "/lib/*", "/lib64/*", "/bin/*",
                                    "/etc/ld.so.cache", d + "/ok/*"])
    sb = files["sb"]
    r = sb.run_with_handlers(["/bin/cat", files["ok"]], common(allow))
    assert r.success, r.stderr
    assert r.stdout == b"fine\n"
    for target in (files["secret"], d + "/ok/../secret", "/etc/hostname"):
        r = sb.run_with_handlers(["/bin/cat", target], common(allow))
        assert not r.success and b"Permission denied" in r.stderr, target
        assert b"TOPSECRET" not in r.stdout
    # relative path resolved against the cwd: still outside the allow-list
    r = sb.run_with_handlers(["/bin/sh", "-c", 'cd "$1" && /bin/cat secret', "sh", d],
                             [("openat", allow)])
    assert b"Permission denied" in r.stderr and b"TOPSECRET" not in r.stdout


# ---- synthesise a return value ----
class FakePid(Handler):
    on_exception = ExceptionPolicy.KILL

    def handle(self, ctx):
        return NotifAction.returns(777)


def test_fake_pid(sb):
    r = sb.run_with_handlers([PY, "-c", "import os; print(os.getpid())"], [("getpid", FakePid())])
    assert r.success, r.stderr
    assert r.stdout == b"777\n"


# ---- inject synthetic content ----
class ServeFile(Handler):
    on_exception = ExceptionPolicy.KILL

    def __init__(self, path, data, **kw):
        self.path, self.data, self.kw = path, data, kw

    def handle(self, ctx):
        if ctx.read_path() == self.path:
            return NotifAction.inject_bytes(self.data, **self.kw)
        return NotifAction.continue_()


def test_hostname_file_inject(sb, host_hostname):
    class HostnameFile(Handler):
        on_exception = ExceptionPolicy.KILL

        def handle(self, ctx):
            if ctx.read_path() == "/etc/hostname":
                return NotifAction.inject_bytes(b"sandbox\n")
            return NotifAction.continue_()

    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], [("openat", HostnameFile())])
    assert r.success, r.stderr
    assert r.stdout == b"sandbox\n"
    assert sb.run(["/bin/cat", "/etc/hostname"]).stdout == host_hostname


PROBE = r"""
import os, sys, fcntl
fd = os.open(sys.argv[1], os.O_RDONLY)
print("data", os.read(fd, 100))
print("inheritable", os.get_inheritable(fd))
print("cloexec", bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC))
print("seals", fcntl.fcntl(fd, fcntl.F_GET_SEALS))
try:
    os.pwrite(fd, b"X", 0); print("write ok")
except OSError as e:
    print("write errno", e.errno)
try:
    os.ftruncate(fd, 0); print("truncate ok")
except OSError as e:
    print("truncate errno", e.errno)
"""
TARGET = "/nonexistent/sandlock-injected"  # content can only come from the handler


def _probe(sb, **kw):
    r = sb.run_with_handlers([PY, "-c", PROBE, TARGET],
                             [("openat", ServeFile(TARGET, b"injected\n", **kw))])
    assert r.success, r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.decode().splitlines())


def test_inject_sealed_and_cloexec_by_default(sb):
    out = _probe(sb)
    assert out["data"] == "b'injected\\n'"
    assert out["inheritable"] == "False" and out["cloexec"] == "True"
    assert int(out["seals"]) & 0xF == 0xF
    assert out["write"] == "errno %d" % errno.EPERM
    assert out["truncate"] == "errno %d" % errno.EPERM


def test_inject_cloexec_false_and_unsealed(sb):
    out = _probe(sb, seal=False, cloexec=False)
    assert out["data"] == "b'injected\\n'"
    assert out["inheritable"] == "True" and out["cloexec"] == "False"
    assert int(out["seals"]) & 0x8 == 0
    assert out["write"] == "ok" and out["truncate"] == "ok"


def test_inject_fd_send_of_own_fd(files):
    class Redirect(Handler):
        def handle(self, ctx):
            if ctx.read_path() == TARGET:
                return NotifAction.inject_fd_send(os.open(files["aaaa.txt"], os.O_RDONLY))
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", TARGET], [("openat", Redirect())])
    assert r.success and r.stdout == b"content-A\n"


# ---- kill ----
class KillOnEtc(Handler):
    def handle(self, ctx):
        path = ctx.read_path()
        if path and path.startswith("/etc/"):
            return NotifAction.kill(signal.SIGKILL, pgid=0)
        return NotifAction.continue_()


def test_kill_on_etc(sb):
    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], common(KillOnEtc()))
    assert r.reason is sandlock.ExitReason.KILLED and r.signal == -1 and not r.success
    assert r.stdout == b""


# ---- combining handlers ----
class Recorder(Handler):
    def __init__(self, tag, log, target, action):
        self.tag, self.log, self.target, self.action = tag, log, target, action

    def handle(self, ctx):
        if ctx.read_path() == self.target:
            self.log.append(self.tag)
            return self.action
        return NotifAction.continue_()


def test_combine_handlers_order_and_short_circuit(files):
    log = []
    t = files["aaaa.txt"]
    first = Recorder("first", log, t, NotifAction.continue_())
    second = Recorder("second", log, t, NotifAction.errno(errno.EACCES))
    third = Recorder("third", log, t, NotifAction.continue_())
    r = files["sb"].run_with_handlers(["/bin/cat", t],
                                      [("openat", first), ("openat", second), ("openat", third)])
    assert log == ["first", "second"]  # third never runs: errno short-circuits
    assert b"Permission denied" in r.stderr

    log.clear()
    r = files["sb"].run_with_handlers(["/bin/cat", t], [("openat", third), ("openat", first)])
    assert log == ["third", "first"] and r.stdout == b"content-A\n"


# ---- LogSyscallsHandler ----
LINE = re.compile(r"^syscall=(\d+) pid=(\d+) args=\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)$")


def test_log_syscalls_with_list_append(sb, host_hostname):
    lines = []
    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], [("openat", LogSyscallsHandler(lines.append))])
    assert r.success and r.stdout == host_hostname
    assert lines and all(LINE.match(l) for l in lines), lines
    nr = sandlock._native.syscall_nr("openat")
    assert all(int(LINE.match(l).group(1)) == nr for l in lines)


def test_log_syscalls_raising_logger_is_absorbed(sb, host_hostname):
    calls = []

    def bad(line):
        calls.append(line)
        raise RuntimeError("logger down")

    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], [("openat", LogSyscallsHandler(bad))])
    assert r.success and r.stdout == host_hostname and calls


def test_log_syscalls_default_logger(sb, caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="sandlock.audit"):
        r = sb.run_with_handlers(["/bin/true"], [("execve", LogSyscallsHandler())])
    assert r.success
    assert any(LINE.match(rec.getMessage()) for rec in caplog.records if rec.name == "sandlock.audit")


# ---- child memory accessors ----
def test_read_cstr_read_write(files):
    a, b = files["aaaa.txt"], files["bbbb.txt"]
    got = {}

    class Swap(Handler):
        def handle(self, ctx):
            addr = ctx.args[1]
            if ctx.read_cstr(addr) == a:
                got["raw"] = ctx.read(addr, len(a) + 1)
                got["short"] = ctx.read_cstr(addr, max_len=4)  # no NUL within 4: None
                got["bad"] = ctx.read(8, 16)
                got["bad_cstr"] = ctx.read_cstr(0)
                got["write"] = ctx.write(addr, b.encode())  # same length
                got["after"] = ctx.read_path()
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", a], [("openat", Swap())])
    assert got["raw"] == a.encode() + b"\0"
    assert got["short"] is None and got["bad"] is None and got["bad_cstr"] is None
    assert got["write"] is True and got["after"] == b
    # the kernel re-read the (rewritten) path on CONTINUE
    assert r.stdout == b"content-B\n"


def test_stale_ctx_after_callback(sb):
    kept = []

    class Keep(Handler):
        def handle(self, ctx):
            kept.append((ctx, ctx.read_path()))
            return NotifAction.continue_()

    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], [("openat", Keep())])
    assert r.success and kept
    ctx, live = [(c, p) for c, p in kept if p == "/etc/hostname"][0]
    assert ctx.read_path() is None
    assert ctx.read_cstr(ctx.args[1]) is None
    assert ctx.read(ctx.args[1], 4) is None
    assert ctx.write(ctx.args[1], b"x") is False


# ---- deferred (async) handlers ----
def test_async_handler_on_connect_resumes_at_the_destination_rules():
    """An async handler on connect (issue 25): its continue_() goes on to
    the destination rules, which perform the call; the rule names
    127.0.0.1 only, so 127.0.0.2 is refused (EACCES; the kernel would
    have said ECONNREFUSED: nothing listens there)."""
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    port = ls.getsockname()[1]
    seen = []

    class SlowAudit(Handler):
        async def handle(self, ctx):
            await asyncio.sleep(0.01)
            seen.append(ctx.syscall_nr)
            return NotifAction.continue_()

    code = ("import socket\n"
            "for h in ('127.0.0.1', '127.0.0.2'):\n"
            "    s = socket.socket()\n"
            "    try:\n"
            "        s.connect((h, %d)); print('ok')\n"
            "    except OSError as e:\n"
            "        print(e.errno)\n" % port)
    sb = sandlock.Sandbox(fs_readable=SYSTEM, net_allow=["tcp://127.0.0.1:%d" % port],
                          timeout=60)
    r = sb.run_with_handlers([PY, "-c", code], [("connect", SlowAudit())])
    ls.close()
    assert r.stdout.decode().split() == ["ok", str(errno.EACCES)], r.stderr
    assert len(seen) >= 2


def test_async_handler_on_openat_under_the_proc_policy(files):
    """With /proc readable every open is performed by sandlock; an async
    handler's continue_() hands the open to it (it once refused to
    register), and an async deny still wins."""
    t = files["aaaa.txt"]

    class SlowDeny(Handler):
        async def handle(self, ctx):
            await asyncio.sleep(0.01)
            if ctx.read_path() == t:
                return NotifAction.errno(errno.EXDEV)
            return NotifAction.continue_()

    sb = sandlock.Sandbox(fs_readable=SYSTEM + [os.path.dirname(t), "/proc"], timeout=60)
    r = sb.run_with_handlers(["/bin/sh", "-c", "head -1 /proc/self/status; cat %s" % t],
                             [("openat", SlowDeny())])
    assert r.stdout.decode().startswith("Name:\thead"), r.stderr
    assert b"cross-device" in r.stderr


def test_async_handler_errno_after_await(files):
    seen = []
    t = files["aaaa.txt"]

    class SlowDeny(Handler):
        async def handle(self, ctx):
            before = ctx.read_path()
            await asyncio.sleep(0.05)
            after = ctx.read_path()  # ctx stays valid across awaits
            seen.append((before, after))
            if after == t:
                return NotifAction.errno(errno.EACCES)
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", t], [("openat", SlowDeny())])
    assert (t, t) in seen
    assert not r.success and b"Permission denied" in r.stderr


def test_async_handler_on_execve_is_refused(sb):
    called = []

    class AsyncExec(Handler):
        async def handle(self, ctx):
            called.append(ctx.read_path())
            return NotifAction.continue_()

    # The launcher's own execve is the first trapped call: refused with
    # EPERM, so the exec fails (126 = exec error other than ENOENT).
    r = sb.run_with_handlers(["/bin/echo", "ran"], [("execve", AsyncExec())])
    assert r.reason is sandlock.ExitReason.EXITED and r.exit_code == 126 and r.stdout == b""
    assert called == []


def test_async_handlers_overlap():
    class Overlap(Handler):
        def __init__(self):
            self.lock = threading.Lock()
            self.active = self.max_active = self.calls = 0

        async def handle(self, ctx):
            with self.lock:
                self.active += 1
                self.calls += 1
                self.max_active = max(self.max_active, self.active)
            try:
                await asyncio.sleep(0.5)
            finally:
                with self.lock:
                    self.active -= 1
            return NotifAction.returns(0)

    # time.sleep releases the child's GIL, so the 4 threads really block in
    # clock_nanosleep at the same time (os.getppid would hold the GIL).
    code = ("import time, threading\nout = []\n"
            "def f():\n    time.sleep(0.001)\n    out.append(1)\n"
            "ts = [threading.Thread(target=f) for _ in range(4)]\n"
            "[t.start() for t in ts]\n[t.join() for t in ts]\nprint(len(out))\n")
    h = Overlap()
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run_with_handlers(
        [PY, "-c", code], [("clock_nanosleep", h), ("nanosleep", h)])
    assert r.success, r.stderr
    assert r.stdout == b"4\n"
    assert h.calls >= 4
    assert h.max_active > 1


# ---- exception policies ----
class Boom(Handler):
    def __init__(self, target, policy, result="raise"):
        self.target, self.on_exception, self.result = target, policy, result

    def handle(self, ctx):
        if ctx.read_path() == self.target:
            if self.result == "raise":
                raise RuntimeError("handler bug")
            return self.result
        return NotifAction.continue_()


@pytest.mark.parametrize("result", ["raise", None, "not an action"])
def test_exception_policy_kill(files, result):
    r = files["sb"].run_with_handlers(
        ["/bin/cat", files["aaaa.txt"]], [("openat", Boom(files["aaaa.txt"], ExceptionPolicy.KILL, result))])
    assert r.reason is sandlock.ExitReason.KILLED and r.stdout == b""


@pytest.mark.parametrize("policy,msg", [(ExceptionPolicy.DENY_EPERM, b"Operation not permitted"),
                                        (ExceptionPolicy.DENY_EIO, b"Input/output error")])
@pytest.mark.parametrize("result", ["raise", None])
def test_exception_policy_deny(files, policy, msg, result):
    r = files["sb"].run_with_handlers(
        ["/bin/cat", files["aaaa.txt"]], [("openat", Boom(files["aaaa.txt"], policy, result))])
    assert r.reason is sandlock.ExitReason.EXITED and r.exit_code != 0
    assert msg in r.stderr and r.stdout == b""


def test_exception_policy_continue_runs_later_handlers(files):
    log = []
    t = files["aaaa.txt"]
    later = Recorder("later", log, t, NotifAction.continue_())
    r = files["sb"].run_with_handlers(
        ["/bin/cat", t], [("openat", Boom(t, ExceptionPolicy.CONTINUE)), ("openat", later)])
    assert r.success and r.stdout == b"content-A\n"
    assert log == ["later"]


def test_async_handler_exception_policy(files):
    t = files["aaaa.txt"]

    class AsyncBoom(Handler):
        on_exception = ExceptionPolicy.DENY_EIO

        async def handle(self, ctx):
            await asyncio.sleep(0)
            if ctx.read_path() == t:
                raise ValueError("async bug")
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", t], [("openat", AsyncBoom())])
    assert b"Input/output error" in r.stderr


def test_read_path_valueerror_under_kill_kills(sb):
    # KillOnEtc registered on a syscall outside the path table: read_path
    # raises ValueError and the default KILL policy kills the child.
    r = sb.run_with_handlers([PY, "-c", "import os; os.getpid()"], [("getpid", KillOnEtc())])
    assert r.reason is sandlock.ExitReason.KILLED


# ---- ownership ----
def test_handler_refs_released_after_run(sb):
    class Plain(Handler):
        def handle(self, ctx):
            return NotifAction.continue_()

    h = Plain()
    ref = weakref.ref(h)
    # the same instance on several syscalls: one C handler
    r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], common(h))
    assert r.success
    assert not _callback._registry
    del h
    gc.collect()
    assert ref() is None


def test_refs_released_on_failed_run(sb):
    class Plain(Handler):
        def handle(self, ctx):
            return NotifAction.continue_()

    h1, h2 = Plain(), Plain()
    refs = [weakref.ref(h1), weakref.ref(h2)]
    # ptrace is a known syscall (accepted by Python), refused by the C side
    # once the handlers exist: they must be released on that path too.
    with pytest.raises(sandlock.PolicyError):
        sb.run_with_handlers(["/bin/true"], [("openat", h1), ("ptrace", h2)])
    assert not _callback._registry
    r = sb.run_with_handlers(["no-such-command-sandlock-xyz"], [("openat", h1), ("getpid", h2)])
    assert r.exit_code == 127  # the launch failed before any child started
    assert not _callback._registry
    del h1, h2
    gc.collect()
    assert all(r() is None for r in refs)


def _raw_run(sb, argv, names_and_handlers):
    """Drive sandlock_run_with_handlers directly through the ABI."""
    import ctypes
    from sandlock import _native as N
    lib = N.lib
    regs = (N.Registration * len(names_and_handlers))()
    for i, (name, h) in enumerate(names_and_handlers):
        regs[i].syscall = name.encode()
        regs[i].handler = h
    arr = (ctypes.c_char_p * len(argv))(*[a.encode() for a in argv])
    err, msg = N.error_out()
    r = lib.sandlock_run_with_handlers_err(sb._native_for(None).ptr, arr, len(argv), regs, len(regs),
                                       ctypes.byref(err), ctypes.byref(msg))
    N.take_string(msg.value)
    if r:
        lib.sandlock_result_free(r)
    return bool(r), err.value


@pytest.mark.parametrize("argv,ok", [(["/bin/true"], True),
                                     (["no-such-command-sandlock-xyz"], False)])
def test_c_abi_ud_free_exactly_once_per_handler(sb, argv, ok):
    """The ABI contract the package relies on: the run owns its handlers and
    calls each ud_free exactly once (a handler listed twice is freed once),
    on success and on failure."""
    from sandlock import _native as N
    freed = []
    ud_free = N.UD_FREE_FN(lambda ud: freed.append(ud))
    fn = N.HANDLER_FN(lambda ud, n, m, out: (N.lib.sandlock_action_set_continue(out), 0)[1])
    h1 = N.lib.sandlock_handler_new(fn, 11, ud_free, 2)
    h2 = N.lib.sandlock_handler_new(fn, 22, ud_free, 2)
    assert h1 and h2
    got_ok, _ = _raw_run(sb, argv, [("openat", h1), ("getpid", h2), ("getppid", h1)])
    assert got_ok is ok
    assert sorted(freed) == [11, 22]
    assert N.lib.sandlock_handler_new(fn, 33, ud_free, 99) is None  # bad policy
    assert sorted(freed) == [11, 22]  # ud_free not called for the rejected one


# ---- remaining action kinds ----
def test_hold_keeps_call_pending_until_run_ends(sb):
    class Hold(Handler):
        def handle(self, ctx):
            return NotifAction.hold()

    r = sb.run_with_handlers([PY, "-c", "import os; print('before', flush=True); os.getppid(); print('after')"],
                             [("getppid", Hold())], timeout=1)
    assert r.reason is sandlock.ExitReason.TIMEOUT
    assert r.stdout == b"before\n"


def test_inject_fd_send_tracked(files):
    class Redirect(Handler):
        def handle(self, ctx):
            if ctx.read_path() == TARGET:
                fd = os.open(files["bbbb.txt"], os.O_RDONLY)
                return NotifAction.inject_fd_send_tracked(fd, os.O_CLOEXEC, tracker=7)
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", TARGET], [("openat", Redirect())])
    assert r.success and r.stdout == b"content-B\n"



# ---- the trampoline's raw encodings, seen by a real child ----
RAW_SYSCALL = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr = int(sys.argv[1])
print("pid", os.getpid())
big = [2**64 - 1, 2**63, 0x8000000000000001, 1, 0xFFFFFFFF00000000]
for i in range(int(sys.argv[2])):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_uint64(a) for a in big], ctypes.c_uint64(1000 + i))
    print("ret", i, r)
"""
BIG_ARGS = (2 ** 64 - 1, 2 ** 63, 0x8000000000000001, 1, 0xFFFFFFFF00000000)


class _ReturnsByIndex(Handler):
    """On the marked calls (args[5] = 1000 + i): record the ctx and return
    values[i]; anything else (the interpreter's own calls) continues."""

    def __init__(self, values):
        self.values, self.ctxs = values, []

    def handle(self, ctx):
        i = ctx.args[5] - 1000
        if 0 <= i < len(self.values):
            self.ctxs.append(ctx)
            return NotifAction.returns(self.values[i])
        return NotifAction.continue_()


def test_returns_negative_and_extreme_values_reach_the_child(sb):
    values = [-12345, -(1 << 40), -(1 << 63), (1 << 63) - 1, 0, 4096]
    h = _ReturnsByIndex(values)
    nr = sandlock._native.syscall_nr("getppid")
    r = sb.run_with_handlers([PY, "-c", RAW_SYSCALL, str(nr), str(len(values))], [("getppid", h)])
    assert r.success, r.stderr
    got = [int(l.split()[2]) for l in r.stdout.decode().splitlines() if l.startswith("ret")]
    # without the handler getppid would return the parent's pid every time
    assert got == values


def test_ctx_fields_and_large_u64_args_from_a_real_child(sb):
    h = _ReturnsByIndex([7, 8])
    nr = sandlock._native.syscall_nr("getppid")
    r = sb.run_with_handlers([PY, "-c", RAW_SYSCALL, str(nr), "2"], [("getppid", h)])
    assert r.success, r.stderr
    lines = r.stdout.decode().splitlines()
    child_pid = int(lines[0].split()[1])
    assert [l.split()[2] for l in lines[1:]] == ["7", "8"]
    assert len(h.ctxs) == 2
    for i, ctx in enumerate(h.ctxs):
        assert isinstance(ctx, sandlock.HandlerCtx)
        assert ctx.args == BIG_ARGS + (1000 + i,)
        assert all(type(a) is int for a in ctx.args)
        assert ctx.pid == child_pid and ctx.syscall_nr == nr and ctx.syscall_name == "getppid"
        assert ctx.instruction_pointer > 0 and ctx.id >= 0
        if os.uname().machine == "x86_64":
            assert ctx.arch == 0xC000003E  # AUDIT_ARCH_X86_64
        with pytest.raises(AttributeError):  # FrozenInstanceError is an AttributeError
            ctx.pid = 1
    assert h.ctxs[0].id != h.ctxs[1].id


def test_sync_handle_returning_an_awaitable_still_works(sb):
    """A plain ``def handle`` that returns a coroutine is awaited, as before
    the fast path for plain NotifAction results."""
    class Sneaky(Handler):
        def handle(self, ctx):
            async def later():
                return NotifAction.returns(777)
            return later()

    r = sb.run_with_handlers([PY, "-c", "import os; print(os.getpid())"], [("getpid", Sneaky())])
    assert r.success, r.stderr
    assert r.stdout == b"777\n"


# ---- thread state of the supervisor thread ----
class _Marker:
    pass


def test_supervisor_thread_state_reused_in_a_run_and_released_after(sb, host_hostname):
    """The trampoline keeps one Python thread state per supervisor thread
    for the whole run (thread-locals survive between calls) and releases it
    when the thread ends, before run_with_handlers returns (what was stored
    in it is freed: no leak across runs)."""
    if not _pin._pin.enabled:
        pytest.skip("thread-state pinning disabled (SANDLOCK_PY_NO_PIN)")

    class Counting(Handler):
        def __init__(self):
            self.tls = threading.local()
            self.seen, self.markers = [], []

        def handle(self, ctx):
            n = getattr(self.tls, "n", 0) + 1
            self.tls.n = n
            if n == 1:
                self.tls.marker = m = _Marker()
                self.markers.append(weakref.ref(m))
            self.seen.append(n)
            return NotifAction.continue_()

    for _ in range(3):
        h = Counting()
        r = sb.run_with_handlers(["/bin/cat", "/etc/hostname"], [("openat", h)])
        assert r.success and r.stdout == host_hostname
        # ld.so.cache, libc, /etc/hostname...: all on one supervisor thread
        assert len(h.seen) >= 3 and h.seen == list(range(1, len(h.seen) + 1))
        assert len(h.markers) == 1
        gc.collect()
        assert h.markers[0]() is None, "the supervisor's thread state outlived the run"


def test_async_worker_thread_states_released_after_run(files):
    if not _pin._pin.enabled:
        pytest.skip("thread-state pinning disabled (SANDLOCK_PY_NO_PIN)")
    markers = []
    tls = threading.local()

    class AsyncMark(Handler):
        async def handle(self, ctx):
            if not hasattr(tls, "m"):
                tls.m = m = _Marker()
                markers.append(weakref.ref(m))
            await asyncio.sleep(0)
            return NotifAction.continue_()

    r = files["sb"].run_with_handlers(["/bin/cat", files["aaaa.txt"]], [("openat", AsyncMark())])
    assert r.success and r.stdout == b"content-A\n"
    assert markers
    gc.collect()
    assert all(m() is None for m in markers)
