"""API surface, argument validation and value objects (no handlers run)."""
import errno
import fcntl
import os
import signal
import subprocess
import sys

import pytest

import sandlock
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
    {"fs_readable": [1]}, {"fs_readable": 5}, {"net_allow": "80"}, {"net_allow": ["80"]},
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
    assert sandlock.Sandbox(max_memory="64M").max_memory == 64 << 20


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
        sb.run_with_handlers(["/bin/true"], [(1, H1())])
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
    assert not H._registry  # references released on the failure path


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
    assert presets.PathDenyHandler(["*"]).handle(c) == NotifAction.continue_()
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
