"""API surface, argument validation and value objects (no handlers run)."""
import errno
import fcntl
import os
import signal
import subprocess
import sys

import pytest

import sandlock
from sandlock import _callback
from sandlock import handler as H
from sandlock.handler import ActionKind, ExceptionPolicy, HandlerCtx, NotifAction
from sandlock import presets
from conftest import REPO


# ---- root surface ----
def test_root_reexports_core_types_not_presets():
    for name in ("Sandbox", "Result", "SandlockError", "Handler", "HandlerCtx",
                 "NotifAction", "ExceptionPolicy"):
        assert hasattr(sandlock, name), name
    assert sandlock.Handler is H.Handler
    for name in ("AuditPathsHandler", "PathDenyHandler", "PathAllowHandler",
                 "LogSyscallsHandler", "COMMON_PATH_SYSCALLS"):
        assert not hasattr(sandlock, name), name


def test_abi_numbers():
    assert [int(p) for p in (ExceptionPolicy.KILL, ExceptionPolicy.DENY_EPERM,
                             ExceptionPolicy.CONTINUE, ExceptionPolicy.DENY_EIO)] == [0, 1, 2, 3]
    assert [k.name for k in sorted(ActionKind)] == [
        "UNSET", "CONTINUE", "ERRNO", "RETURN_VALUE", "INJECT_FD_SEND",
        "INJECT_FD_SEND_TRACKED", "HOLD", "KILL"]
    assert [int(k) for k in sorted(ActionKind)] == list(range(8))


def test_common_path_syscalls_exact():
    assert presets.COMMON_PATH_SYSCALLS == [
        "openat", "unlinkat", "newfstatat", "statx", "faccessat",
        "readlinkat", "mkdirat", "execveat", "execve"]


# ---- library lookup ----
def _import_in_subprocess(env_extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), **env_extra)
    return subprocess.run([sys.executable, "-c", "import sandlock; print(sandlock._native.LIB_PATH)"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_lib_env_var_bad_path_is_clear_import_error():
    p = _import_in_subprocess({"SANDLOCK_LIB": "/nonexistent/libsandlock.so"})
    assert p.returncode != 0
    assert "ImportError" in p.stderr and "SANDLOCK_LIB" in p.stderr


def test_lib_found_in_tree_without_env():
    env = {k: v for k, v in os.environ.items() if k != "SANDLOCK_LIB"}
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    p = subprocess.run([sys.executable, "-c", "import sandlock; print(sandlock._native.LIB_PATH)"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == os.path.join(REPO, "build", "libsandlock.so")


# ---- Sandbox validation ----
@pytest.mark.parametrize("kw", [
    {"fs_readable": "/usr"}, {"fs_writable": "/tmp"}, {"fs_denied": "/etc"},
    {"fs_readable": [1]}, {"fs_readable": 5}, {"net_allow": "80"}, {"net_allow": [b"80"]},
    {"net_allow_bind": [True]}, {"env": [("A", "B")]}, {"env": {"A": 1}},
    {"clean_env": "yes"}, {"max_processes": "3"}, {"max_processes": 2.5},
    {"max_memory": 1.5}, {"max_memory": True}, {"timeout": "5"}, {"timeout": True},
    {"cwd": 3},
])
def test_sandbox_type_errors(kw):
    with pytest.raises(TypeError):
        sandlock.Sandbox(**kw)


@pytest.mark.parametrize("kw", [
    {"net_allow": [0]}, {"net_allow": [65536]}, {"net_allow_bind": [-1]},
    {"max_processes": 0}, {"max_memory": 0}, {"max_memory": "lots"}, {"max_memory": "-5M"},
    {"timeout": 0}, {"timeout": -1}, {"timeout": float("nan")}, {"fs_readable": [""]},
    {"fs_readable": ["/us\0r"]}, {"env": {"A=B": "c"}},
])
def test_sandbox_value_errors(kw):
    with pytest.raises(ValueError):
        sandlock.Sandbox(**kw)


def test_max_memory_parsing():
    assert sandlock.parse_size("64M") == 64 << 20
    assert sandlock.parse_size("1G") == 1 << 30
    assert sandlock.parse_size("512k") == 512 << 10
    assert sandlock.parse_size("2MiB") == 2 << 20
    assert sandlock.parse_size(4096) == 4096
    assert sandlock.Sandbox(max_memory="64M").memory_bytes() == 64 << 20


def test_build_error_nonexistent_path_is_sandlock_error():
    with pytest.raises(sandlock.SandlockError) as ei:
        sandlock.Sandbox(fs_readable=["/nonexistent-sandlock-test-path"])
    e = ei.value
    assert e.code == 2 and e.code_name == "NOT_FOUND"
    assert e.message
    assert "nonexistent-sandlock-test-path" in str(e)
    assert not isinstance(e, OSError)  # documented: code is not an errno


def test_cmd_validation(sb):
    with pytest.raises(TypeError):
        sb.run("/bin/true")
    with pytest.raises(TypeError):
        sb.run([b"/bin/true", 3])
    with pytest.raises(ValueError):
        sb.run([])
    with pytest.raises(ValueError):
        sb.run(["/bin/echo", "a\0b"])
    with pytest.raises(TypeError):
        sb.run(["/bin/true"], timeout="1")


def test_run_with_handlers_validation(sb):
    class H1(sandlock.Handler):
        def handle(self, ctx):
            return NotifAction.continue_()

    with pytest.raises(TypeError):
        sb.run_with_handlers(["/bin/true"], ("openat", H1()))   # not a list of pairs
    with pytest.raises(TypeError):
        sb.run_with_handlers(["/bin/true"], [("openat", object())])
    with pytest.raises(TypeError):
        sb.run_with_handlers(["/bin/true"], [(True, H1())])  # bool is not a syscall number
    with pytest.raises(TypeError):
        sb.run_with_handlers(["/bin/true"], [(1.0, H1())])
    with pytest.raises(TypeError):
        sb.run_with_handlers(["/bin/true"], [("openat", sandlock.Handler())])  # no handle()

    class BadPolicy(H1):
        on_exception = 9

    with pytest.raises(ValueError):
        sb.run_with_handlers(["/bin/true"], [("openat", BadPolicy())])


def test_unknown_syscall_is_sandlock_error(sb):
    class H1(sandlock.Handler):
        def handle(self, ctx):
            return NotifAction.continue_()

    with pytest.raises(sandlock.SandlockError) as ei:
        sb.run_with_handlers(["/bin/true"], [("no_such_syscall_xyz", H1())])
    assert ei.value.code_name == "SYSCALL"
    assert not _callback._registry  # references released on the failure path


# ---- NotifAction factories ----
def test_action_factories():
    assert NotifAction.continue_().kind == ActionKind.CONTINUE
    a = NotifAction.errno(errno.EACCES)
    assert (a.kind, a.value) == (ActionKind.ERRNO, errno.EACCES)
    assert NotifAction.returns(-5).value == -5
    assert NotifAction.hold().kind == ActionKind.HOLD
    k = NotifAction.kill(signal.SIGKILL, pgid=0)
    assert (k.kind, k.sig, k.pgid) == (ActionKind.KILL, signal.SIGKILL, 0)
    assert NotifAction.continue_() == NotifAction.continue_()
    with pytest.raises(dataclasses_frozen_error()):
        a.value = 3


def dataclasses_frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


@pytest.mark.parametrize("call,exc", [
    (lambda: NotifAction.errno(0), ValueError),
    (lambda: NotifAction.errno(4096), ValueError),
    (lambda: NotifAction.errno("1"), TypeError),
    (lambda: NotifAction.errno(True), TypeError),
    (lambda: NotifAction.returns(1 << 63), ValueError),
    (lambda: NotifAction.returns(1.0), TypeError),
    (lambda: NotifAction.kill(0), ValueError),
    (lambda: NotifAction.kill(9, pgid=-1), ValueError),
    (lambda: NotifAction.inject_fd_send(-1), ValueError),
    (lambda: NotifAction.inject_fd_send(3, newfd_flags=os.O_RDWR), ValueError),
    (lambda: NotifAction.inject_bytes("text"), TypeError),
])
def test_action_factory_validation(call, exc):
    with pytest.raises(exc):
        call()


def _seals(fd):
    return fcntl.fcntl(fd, getattr(fcntl, "F_GET_SEALS", 1034))


def test_inject_bytes_builds_sealed_rewound_memfd():
    a = NotifAction.inject_bytes(b"hello\n")
    try:
        assert a.kind == ActionKind.INJECT_FD_SEND and a.newfd_flags == os.O_CLOEXEC
        assert os.pread(a.srcfd, 100, 0) == b"hello\n"
        assert os.lseek(a.srcfd, 0, os.SEEK_CUR) == 0
        assert _seals(a.srcfd) & 0xF == 0xF  # SEAL|SHRINK|GROW|WRITE
        with pytest.raises(OSError):
            os.write(a.srcfd, b"x")
    finally:
        os.close(a.srcfd)
    b = NotifAction.inject_bytes(bytearray(b"w"), seal=False, cloexec=False)
    try:
        assert b.newfd_flags == 0 and _seals(b.srcfd) & 0x8 == 0
        os.write(b.srcfd, b"x")
    finally:
        os.close(b.srcfd)


# ---- HandlerCtx without a live mem handle ----
def _ctx(name, args=(0,) * 6):
    return HandlerCtx(1, os.getpid(), 0, sandlock._native.syscall_nr(name), 0, 0, tuple(args))


@pytest.mark.parametrize("name", ["renameat2", "rename", "linkat", "link", "symlinkat", "symlink"])
def test_read_path_multi_path_raises(name):
    with pytest.raises(ValueError):
        _ctx(name).read_path()


def test_read_path_unknown_syscall_raises_and_explicit_arg_works():
    with pytest.raises(ValueError):
        _ctx("getpid").read_path()
    assert _ctx("getpid").read_path(arg=0) is None  # no mem handle -> None
    with pytest.raises(ValueError):
        _ctx("getpid").read_path(arg=6)


def test_read_path_table():
    nr = sandlock._native.syscall_nr
    for name in ("openat", "unlinkat", "mkdirat", "newfstatat", "statx", "faccessat",
                 "readlinkat", "execveat", "openat2"):
        assert H.PATH_ARG_SYSCALLS[nr(name)] == 1, name
    for name in ("open", "unlink", "mkdir", "rmdir", "stat", "lstat", "access",
                 "readlink", "execve", "creat"):
        assert H.PATH_ARG_SYSCALLS[nr(name)] == 0, name


def test_absent_mem_handle_returns_none():
    c = _ctx("openat", (0, 0x1000, 0, 0, 0, 0))
    assert c.read_path() is None
    assert c.read_cstr(0x1000) is None
    assert c.read(0x1000, 4) is None
    assert c.write(0x1000, b"x") is False
    assert c.syscall_name == "openat"


# ---- preset constructor rules ----
def test_preset_type_rules():
    with pytest.raises(TypeError):
        presets.PathDenyHandler("/etc/*")
    with pytest.raises(TypeError):
        presets.PathAllowHandler("/etc/*")
    with pytest.raises(TypeError):
        presets.PathDenyHandler([b"/etc/*"])
    with pytest.raises(TypeError):
        presets.PathAllowHandler({"/etc/*"})
    with pytest.raises(ValueError):
        presets.PathDenyHandler(["/etc/*"], errno=0)
    with pytest.raises(TypeError):
        presets.AuditPathsHandler(callback="print")
    with pytest.raises(TypeError):
        presets.LogSyscallsHandler(logger=5)
    assert presets.AuditPathsHandler(print).on_exception == ExceptionPolicy.CONTINUE
    assert presets.LogSyscallsHandler().on_exception == ExceptionPolicy.CONTINUE
    assert presets.PathDenyHandler(["/x"]).on_exception == ExceptionPolicy.KILL
    assert presets.PathAllowHandler(("/x",)).on_exception == ExceptionPolicy.KILL
    assert presets.PathDenyHandler(["/x"]).errno == errno.EPERM
    assert presets.PathAllowHandler(["/x"]).errno == errno.EACCES


def test_path_presets_on_unreadable_path():
    # No mem handle -> path None: deny-list continues, allow-list fails closed.
    c = _ctx("openat", (0, 0x1000, 0, 0, 0, 0))
    st = _ctx("newfstatat", (0, 0x1000, 0, 0, 0, 0))
    assert presets.PathDenyHandler(["*"]).handle(st) == NotifAction.continue_()
    assert presets.PathAllowHandler(["*"]).handle(st) == NotifAction.errno(errno.EACCES)
    # Without a live notification the spec's rule applies to the open
    # family too (path None: the deny list defers); a live one is opened
    # on behalf (test_presets_race.py).
    assert presets.PathDenyHandler(["*"]).handle(c) == NotifAction.continue_()
    assert presets.PathDenyHandler(["*"], on_behalf=False).handle(c) == NotifAction.continue_()
    assert presets.PathAllowHandler(["*"]).handle(c) == NotifAction.errno(errno.EACCES)
    seen = []
    presets.AuditPathsHandler(lambda p, ctx: seen.append(p)).handle(c)
    presets.AuditPathsHandler(lambda p, ctx: seen.append(p)).handle(_ctx("renameat2"))
    assert seen == [None, None]


def test_log_line_format():
    lines = []
    presets.LogSyscallsHandler(lines.append).handle(
        HandlerCtx(1, 42, 0, 39, 0, 0, (1, 2, 3, 4, 5, 6)))
    assert lines == ["syscall=39 pid=42 args=(1, 2, 3, 4, 5, 6)"]


# ---- hot-path encodings (the trampoline packs/unpacks raw structs) ----
import ctypes
import dataclasses

from sandlock import _native as N

_C_SETTERS = {
    "continue": lambda out, a: N.lib.sandlock_action_set_continue(out),
    "hold": lambda out, a: N.lib.sandlock_action_set_hold(out),
    "errno": lambda out, a: N.lib.sandlock_action_set_errno(out, a.value),
    "returns": lambda out, a: N.lib.sandlock_action_set_return_value(out, a.value),
    "kill": lambda out, a: N.lib.sandlock_action_set_kill(out, a.sig, a.pgid),
    "inject": lambda out, a: N.lib.sandlock_action_set_inject_fd_send(out, a.srcfd, a.newfd_flags),
    "tracked": lambda out, a: N.lib.sandlock_action_set_inject_fd_send_tracked(
        out, a.srcfd, a.newfd_flags, a.tracker),
}


@pytest.mark.parametrize("setter,action", [
    ("continue", NotifAction.continue_()),
    ("hold", NotifAction.hold()),
    ("errno", NotifAction.errno(errno.EACCES)),
    ("errno", NotifAction.errno(4095)),
    ("returns", NotifAction.returns(0)),
    ("returns", NotifAction.returns(-5)),
    ("returns", NotifAction.returns(-(1 << 63))),
    ("returns", NotifAction.returns((1 << 63) - 1)),
    ("kill", NotifAction.kill(signal.SIGTERM)),
    ("inject", NotifAction.inject_fd_send(7, 0)),
    ("inject", NotifAction.inject_fd_send(2 ** 31 - 1, os.O_CLOEXEC)),
    ("tracked", NotifAction.inject_fd_send_tracked(9, os.O_CLOEXEC, tracker=2 ** 64 - 1)),
])
def test_apply_writes_exactly_what_the_c_setters_write(setter, action):
    """_apply packs the 24-byte struct itself: byte for byte what the ABI
    setters produce, over a buffer full of garbage (every byte rewritten)."""
    want, got = N.Action(), N.Action()
    ctypes.memset(ctypes.byref(want), 0xA5, 24)
    ctypes.memset(ctypes.byref(got), 0x5A, 24)
    _C_SETTERS[setter](ctypes.byref(want), action)
    action._apply(ctypes.addressof(got))
    assert bytes(got) == bytes(want)


def test_apply_rejects_unset_and_out_of_range_direct_construction():
    out = N.Action()
    with pytest.raises(ValueError):
        NotifAction(ActionKind.UNSET)._apply(ctypes.addressof(out))
    with pytest.raises(Exception):  # bypassed the factory's validation
        NotifAction(ActionKind.ERRNO, errno_value=1 << 40)._apply(ctypes.addressof(out))


def test_fast_factories_build_ordinary_frozen_instances():
    cases = [
        (NotifAction.continue_(), NotifAction(ActionKind.CONTINUE)),
        (NotifAction.hold(), NotifAction(ActionKind.HOLD)),
        (NotifAction.errno(errno.ENOENT), NotifAction(ActionKind.ERRNO, errno_value=errno.ENOENT)),
        (NotifAction.returns(-(1 << 63)), NotifAction(ActionKind.RETURN_VALUE, return_value=-(1 << 63))),
    ]
    for fast, slow in cases:
        assert type(fast) is NotifAction
        assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
        assert vars(fast) == vars(slow) and list(vars(fast)) == list(vars(slow))
        assert dataclasses.astuple(fast) == dataclasses.astuple(slow)
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.errno_value = 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.kind = ActionKind.KILL
    assert NotifAction.continue_().kind == ActionKind.CONTINUE  # shared one unchanged


def test_factories_on_a_subclass_return_the_subclass():
    class Mine(NotifAction):
        pass

    for a in (Mine.continue_(), Mine.hold(), Mine.errno(1), Mine.returns(3)):
        assert type(a) is Mine
    assert Mine.errno(1) == Mine(ActionKind.ERRNO, errno_value=1)


class _Capture(sandlock.Handler):
    def __init__(self, result=None):
        self.ctxs, self.result = [], result

    def handle(self, ctx):
        self.ctxs.append(ctx)
        if isinstance(self.result, BaseException):
            raise self.result
        return NotifAction.continue_() if self.result is None else self.result


def _call_trampoline(handler, notif):
    """Enter the trampoline the way C does: raw addresses, a registry key."""
    key = _callback._register(handler, _callback._RunState())
    out = N.Action()
    ctypes.memset(ctypes.byref(out), 0xEE, 24)
    try:
        rc = _callback._trampoline(key, ctypes.addressof(notif), 0x1234, ctypes.addressof(out))
    finally:
        _callback._unregister(key)
    return rc, out


def _notif(**kw):
    n = N.Notif()
    for k, v in kw.items():
        if k == "args":
            for i, a in enumerate(v):
                n.args[i] = a
        else:
            setattr(n, k, v)
    return n


def test_trampoline_decodes_every_notification_field():
    U64 = 2 ** 64 - 1
    args = (U64, 2 ** 63, 0x8000000000000001, 0, 1, 0xFFFFFFFF00000000)
    n = _notif(id=U64, pid=2 ** 32 - 1, flags=0x80000001, syscall_nr=-1, arch=0xC000003E,
               instruction_pointer=2 ** 63 + 5, args=args)
    h = _Capture()
    rc, out = _call_trampoline(h, n)
    assert rc == 0
    assert (out.kind, out.reserved, list(out.u.raw)) == (ActionKind.CONTINUE, 0, [0, 0])
    (ctx,) = h.ctxs
    assert type(ctx) is HandlerCtx
    assert (ctx.id, ctx.pid, ctx.flags, ctx.syscall_nr, ctx.arch, ctx.instruction_pointer) == (
        U64, 2 ** 32 - 1, 0x80000001, -1, 0xC000003E, 2 ** 63 + 5)
    assert ctx.args == args and type(ctx.args) is tuple
    assert all(type(a) is int for a in ctx.args)
    # an ordinary frozen dataclass instance
    assert ctx == HandlerCtx(U64, 2 ** 32 - 1, 0x80000001, -1, 0xC000003E, 2 ** 63 + 5, args)
    assert list(vars(ctx)) == [f.name for f in dataclasses.fields(HandlerCtx)]
    for field in ("id", "pid", "args", "syscall_nr", "_mem"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ctx, field, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ctx.pid
    assert dataclasses.replace(ctx, pid=7).pid == 7 and ctx.pid == 2 ** 32 - 1
    # stale once the callback returned: the mem handle is gone
    assert ctx._mem.ptr is None and ctx.read(0x1000, 1) is None


@pytest.mark.parametrize("result", [None, RuntimeError("boom"), "not an action", 0])
def test_trampoline_failures_return_nonzero(result):
    h = _Capture(result if result is not None else NotifAction.continue_())
    rc, _ = _call_trampoline(h, _notif(syscall_nr=39))
    assert rc == (0 if result is None else 1)


def test_trampoline_unknown_key_is_a_failure():
    out = N.Action()
    n = _notif()
    assert _callback._trampoline(10 ** 12, ctypes.addressof(n), None, ctypes.addressof(out)) == 1
    assert _callback._trampoline(None, ctypes.addressof(n), None, ctypes.addressof(out)) == 1


def test_trampoline_closes_an_injected_fd_it_could_not_hand_over():
    r, w = os.pipe()
    os.close(w)
    bad = NotifAction(ActionKind.INJECT_FD_SEND, srcfd=r, newfd_flags=1 << 40)  # unpackable
    rc, _ = _call_trampoline(_Capture(bad), _notif())
    assert rc == 1
    with pytest.raises(OSError):
        os.fstat(r)  # closed by the trampoline
