"""The Python API where it must match the reference SDK (issue 8): names,
defaults and behaviour, each checked on real runs where it shows there."""
import dataclasses
import errno
import logging
import os
import signal

import pytest

import sandlock
from sandlock import exceptions as X
from sandlock.handler import ActionKind, ExceptionPolicy, Handler, HandlerCtx, NotifAction
from conftest import PY, SYSTEM


def nr(name):
    n = sandlock._native.syscall_nr(name)
    assert n >= 0
    return n


class Returns(Handler):
    """Answers every call with a fixed action (or a fixed non-action)."""

    def __init__(self, result, policy=ExceptionPolicy.KILL):
        self.result, self.on_exception = result, policy

    def handle(self, ctx):
        return self.result


# ---- NotifAction fields ----
def test_notif_action_has_errno_value_and_return_value_fields():
    names = [f.name for f in dataclasses.fields(NotifAction)]
    for f in ("kind", "errno_value", "return_value", "srcfd", "newfd_flags", "sig", "pgid"):
        assert f in names, f
    e, r = NotifAction.errno(errno.ENOENT), NotifAction.returns(-7)
    assert (e.kind, e.errno_value, e.return_value) == (ActionKind.ERRNO, errno.ENOENT, 0)
    assert (r.kind, r.return_value, r.errno_value) == (ActionKind.RETURN_VALUE, -7, 0)
    for a, field in ((e, "errno_value"), (r, "return_value")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(a, field, 1)
    assert e == NotifAction(ActionKind.ERRNO, errno_value=errno.ENOENT)


def test_errno_value_and_return_value_reach_the_guest(sb):
    prog = ("import os\nprint(os.getppid())\n"
            "try:\n    os.rmdir('/nonexistent-x')\nexcept OSError as e:\n    print(e.errno)\n")
    r = sb.run_with_handlers([PY, "-c", prog], [
        ("getppid", Returns(NotifAction(ActionKind.RETURN_VALUE, return_value=4242))),
        ("rmdir", Returns(NotifAction(ActionKind.ERRNO, errno_value=errno.EXDEV))),
    ])
    assert r.success, r.stderr
    assert r.stdout.split() == [b"4242", str(errno.EXDEV).encode()]


def test_inject_defaults_fd_send_no_cloexec_bytes_cloexec(tmpdir_path):
    src = os.path.join(tmpdir_path, "src.txt")
    with open(src, "w") as f:
        f.write("from-the-supervisor\n")
    a = NotifAction.inject_fd_send(0)
    assert a.newfd_flags == 0
    assert NotifAction.inject_fd_send_tracked(0).newfd_flags == 0
    b = NotifAction.inject_bytes(b"x")
    try:
        assert b.newfd_flags == os.O_CLOEXEC
    finally:
        os.close(b.srcfd)

    class Inject(Handler):
        def handle(self, ctx):
            path = ctx.read_path()
            if path == "/fd-send":
                return NotifAction.inject_fd_send(os.open(src, os.O_RDONLY))
            if path == "/bytes":
                return NotifAction.inject_bytes(b"from-bytes\n")
            return NotifAction.continue_()

    # The guest asks for O_CLOEXEC; what it gets is the action's choice.
    prog = ("import fcntl, os\n"
            "for p in ('/fd-send', '/bytes'):\n"
            "    fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)\n"
            "    print(p, bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC),"
            " os.read(fd, 100).decode().strip())\n")
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run_with_handlers(
        [PY, "-c", prog], [("openat", Inject())])
    assert r.success, r.stderr
    assert r.stdout.decode().splitlines() == [
        "/fd-send False from-the-supervisor", "/bytes True from-bytes"]


# ---- syscall registrations ----
def test_handlers_registered_by_syscall_number(sb):
    r = sb.run_with_handlers([PY, "-c", "import os; print(os.getppid())"],
                             [(nr("getppid"), Returns(NotifAction.returns(31337)))])
    assert r.success, r.stderr
    assert r.stdout == b"31337\n"


@pytest.mark.parametrize("syscall,exc,named", [
    ("no_such_syscall_xyz", ValueError, "no_such_syscall_xyz"),
    (987654, ValueError, "987654"),
    (-1, ValueError, "-1"),
    (True, TypeError, "True"),
    (False, TypeError, "False"),
    (2.0, TypeError, "2.0"),
    (None, TypeError, "None"),
])
def test_bad_syscall_registration_fails_before_any_child(tmpdir_path, syscall, exc, named):
    marker = os.path.join(tmpdir_path, "started")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[tmpdir_path], timeout=60)
    ok = Returns(NotifAction.continue_())
    with pytest.raises(exc) as ei:
        sb.run_with_handlers(["/bin/sh", "-c", "touch %s" % marker],
                             [("getpid", ok), (syscall, ok)])
    assert named in str(ei.value)
    assert isinstance(ei.value, sandlock.PolicyError)
    assert not os.path.exists(marker)
    assert not sandlock._callback._registry
    # the control: the same run with good registrations does start the child
    assert sb.run_with_handlers(["/bin/sh", "-c", "touch %s" % marker], [("getpid", ok)]).success
    assert os.path.exists(marker)


# ---- read_path outside the table ----
def _ctx(syscall):
    return HandlerCtx(id=1, pid=1, flags=0, syscall_nr=nr(syscall), arch=0,
                      instruction_pointer=0, args=(0,) * 6)


@pytest.mark.parametrize("syscall", ["getpid", "renameat2", "linkat"])
def test_read_path_outside_table_says_pass_arg(syscall):
    with pytest.raises(ValueError) as ei:
        _ctx(syscall).read_path()
    assert "pass arg= explicitly" in str(ei.value)
    assert syscall in str(ei.value)


def test_read_path_outside_table_in_a_run(sb):
    seen = []

    class Probe(Handler):
        on_exception = ExceptionPolicy.CONTINUE

        def handle(self, ctx):
            try:
                ctx.read_path()
            except ValueError as e:
                seen.append(str(e))
            return NotifAction.continue_()

    r = sb.run_with_handlers([PY, "-c", "import os; os.getppid()"], [("getppid", Probe())])
    assert r.success, r.stderr
    assert seen and all("pass arg= explicitly" in m for m in seen)


# ---- Result and ExitReason ----
def test_exit_reason_is_an_int_enum_with_abi_values():
    R = sandlock.ExitReason
    assert issubclass(R, int)
    assert [(m.name, int(m)) for m in R] == [
        ("EXITED", 0), ("SIGNALED", 1), ("KILLED", 2), ("TIMEOUT", 3)]
    assert R(2) is R.KILLED and R.KILLED == 2
    assert str(R.TIMEOUT) == "timeout" and "%s" % R.EXITED == "exited"


def test_signal_is_minus_one_without_a_signal(sb):
    for cmd in (["/bin/true"], ["/bin/false"], ["/bin/sh", "-c", "exit 3"]):
        r = sb.run(cmd)
        assert r.reason is sandlock.ExitReason.EXITED and r.signal == -1, cmd


def test_sigkill_from_any_source_is_killed(sb):
    # the command kills itself: nobody in sandlock did it
    r = sb.run(["/bin/sh", "-c", "kill -KILL $$"])
    # the reference: KILLED carries no signal number (-1)
    assert (r.reason, r.signal, r.exit_code) == (sandlock.ExitReason.KILLED, -1, 137)
    assert r.killed_by_handler is False and not r.success
    # another signal stays SIGNALED
    r = sb.run(["/bin/sh", "-c", "kill -TERM $$"])
    assert (r.reason, r.signal) == (sandlock.ExitReason.SIGNALED, signal.SIGTERM)
    assert r.killed_by_handler is False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_handler_kill_is_told_apart(sb, sig):
    r = sb.run_with_handlers([PY, "-c", "import os; os.getppid(); print('survived')"],
                             [("getppid", Returns(NotifAction.kill(sig)))])
    assert r.reason is sandlock.ExitReason.KILLED and r.killed_by_handler is True
    assert r.signal == -1 and r.stdout == b""


def test_timeout_is_not_killed(sb):
    r = sb.run(["/bin/sleep", "30"], timeout=0.3)
    assert r.reason is sandlock.ExitReason.TIMEOUT and r.killed_by_handler is False


# ---- config fields assigned after construction ----
def test_assigned_fs_readable_applies_to_next_run(tmpdir_path):
    secret = os.path.join(tmpdir_path, "secret")
    with open(secret, "w") as f:
        f.write("TOPSECRET")
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [tmpdir_path], timeout=60)
    assert sb.run(["/bin/cat", secret]).stdout == b"TOPSECRET"
    sb.fs_readable = SYSTEM  # narrowed: the next run must not read it
    r = sb.run(["/bin/cat", secret])
    assert not r.success and b"TOPSECRET" not in r.stdout and b"Permission denied" in r.stderr
    assert sb.fs_readable == list(SYSTEM)
    sb.fs_readable = list(SYSTEM) + [tmpdir_path]  # and widened again
    assert sb.run(["/bin/cat", secret]).stdout == b"TOPSECRET"


def test_assigned_fields_env_timeout_clean_env(monkeypatch):
    monkeypatch.setenv("SANDLOCK_OUTER", "outer")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)
    sb.env = {"A": "1"}
    out = sb.run(["/usr/bin/env"]).stdout.decode().splitlines()
    assert "A=1" in out and "SANDLOCK_OUTER=outer" in out
    sb.env["B"] = "2"  # changed in place: applies too
    assert "B=2" in sb.run(["/usr/bin/env"]).stdout.decode().splitlines()
    sb.clean_env = True
    out = sb.run(["/usr/bin/env"]).stdout.decode().splitlines()
    assert "SANDLOCK_OUTER=outer" not in out and "B=2" in out
    sb.timeout = 0.3
    assert sb.run(["/bin/sleep", "30"]).reason is sandlock.ExitReason.TIMEOUT


def test_bad_assignment_raises_at_once_and_changes_nothing():
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)
    with pytest.raises(TypeError):
        sb.fs_readable = "/usr"
    with pytest.raises(ValueError):
        sb.max_processes = 0
    with pytest.raises(sandlock.PolicyError):
        sb.net_allow = [70000]
    assert sb.fs_readable == list(SYSTEM) and sb.max_processes == 64  # the default
    assert sb.run(["/bin/true"]).success
    sb.fs_readable = ["/nonexistent-sandlock-path"]  # exists only at build
    with pytest.raises(sandlock.PolicyError) as ei:
        sb.run(["/bin/true"])
    assert ei.value.code_name == "NOT_FOUND"


def test_bad_env_mutation_is_caught_at_run():
    sb = sandlock.Sandbox(fs_readable=SYSTEM, env={"A": "1"}, timeout=60)
    sb.env["B=C"] = "x"
    with pytest.raises(ValueError):
        sb.run(["/bin/true"])


def test_native_policy_is_reused_until_the_config_changes():
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)
    first = sb._native_for(None)
    assert sb._native_for(None) is first
    sb.fs_readable = list(SYSTEM)  # equal value: same policy
    assert sb._native_for(None) is first
    sb.max_processes = 8
    assert sb._native_for(None) is not first


# ---- exceptions ----
def test_exception_hierarchy():
    S = sandlock
    tree = {
        S.PolicyError: S.SandlockError, S.SandboxError: S.SandlockError,
        S.ForkError: S.SandboxError, S.ConfinementError: S.SandboxError,
        S.LandlockUnavailableError: S.ConfinementError, S.SeccompError: S.ConfinementError,
        S.NotifError: S.SeccompError, S.ChildError: S.SandboxError,
        S.BranchError: S.SandboxError, S.BranchConflictError: S.BranchError,
        S.MemoryProtectError: S.SandlockError,
    }
    for cls, parent in tree.items():
        assert cls.__bases__[0] is parent, cls
        assert getattr(X, cls.__name__) is cls
    assert not issubclass(S.SandlockError, OSError)
    assert issubclass(X.PolicyValueError, ValueError) and issubclass(X.PolicyTypeError, TypeError)
    for cls in (S.PolicyError, S.SandboxError, S.MemoryProtectError):
        assert not issubclass(cls, (ValueError, TypeError))


@pytest.mark.parametrize("kw,exc", [
    ({"fs_readable": "/usr"}, TypeError), ({"max_memory": "lots"}, ValueError),
    ({"net_allow": [0]}, ValueError), ({"fs_readable": ["/nonexistent-sandlock-x"]}, ValueError),
])
def test_bad_config_is_policy_error(kw, exc):
    with pytest.raises(sandlock.PolicyError) as ei:
        sandlock.Sandbox(**kw)
    assert isinstance(ei.value, exc)
    assert ei.value.code_name in ("INVALID", "NOT_FOUND") and ei.value.message


@pytest.mark.parametrize("code,msg,cls", [
    (7, "fork: Resource temporarily unavailable", X.ForkError),
    (7, "landlock_restrict_self failed: EBADFD", X.ConfinementError),
    (7, "seccomp(SET_MODE_FILTER) failed: EINVAL", X.SeccompError),
    (7, "pidfd_getfd: EPERM", X.NotifError),
    (7, "sandboxed child exited during setup", X.ChildError),
    (5, "Landlock is not available on this kernel; refusing to run unconfined",
     X.LandlockUnavailableError),
    (7, "something else", X.SandboxError),
    (6, "unknown syscall 'x'", X.PolicyValueError),
])
def test_run_time_errors_map_to_classes(code, msg, cls):
    e = X.error_for(code, msg, building=False)
    assert type(e) is cls and e.code == code and e.message == msg


def test_sandlock_error_constructors():
    e = sandlock.SandboxError("went wrong")
    assert (e.code_name, e.message) == ("SYSTEM", "went wrong")
    e = sandlock.PolicyError(2, "no such path")
    assert (e.code, e.code_name) == (2, "NOT_FOUND")
    import pickle
    e2 = pickle.loads(pickle.dumps(X.PolicyValueError(3, "bad port")))
    assert type(e2) is X.PolicyValueError and e2.code == 3 and e2.message == "bad port"


# ---- a handler that returns no NotifAction ----
class NoAction(Handler):
    def __init__(self, result, policy):
        self.result, self.on_exception = result, policy

    def handle(self, ctx):
        return self.result


@pytest.mark.parametrize("result", [None, 0, "continue"])
def test_non_action_is_a_handler_error_logged_at_warning(sb, caplog, result):
    caplog.set_level(logging.DEBUG, logger="sandlock")
    prog = ("import os\nfor _ in range(3):\n    try:\n        os.rmdir('/nonexistent-x')\n"
            "    except OSError as e:\n        print(e.errno)\n")
    r = sb.run_with_handlers([PY, "-c", prog], [("rmdir", NoAction(result, ExceptionPolicy.DENY_EIO))])
    assert r.success, r.stderr
    assert r.stdout.split() == [str(errno.EIO).encode()] * 3  # the policy, every time
    recs = [x for x in caplog.records if "NoAction" in x.getMessage()]
    warnings = [x for x in recs if x.levelno == logging.WARNING]
    assert len(warnings) == 1 and len(recs) == 3  # once loud, then DEBUG
    assert "not a NotifAction" in warnings[0].getMessage()
    assert "DENY_EIO" in warnings[0].getMessage()


def test_non_action_under_kill_policy_kills(sb, caplog):
    r = sb.run_with_handlers([PY, "-c", "import os; os.getppid(); print('survived')"],
                             [("getppid", NoAction(None, ExceptionPolicy.KILL))])
    assert r.reason is sandlock.ExitReason.KILLED and r.killed_by_handler
    assert r.stdout == b""
    assert any(x.levelno == logging.WARNING and "NoAction" in x.getMessage()
               for x in caplog.records)


# ---- parse_memory_size and name= ----
@pytest.mark.parametrize("text,n", [
    ("1.5G", 3 << 29), ("0.5k", 512), ("512M", 512 << 20), ("2MiB", 2 << 20),
    ("1.25 KB", 1280), (".5M", 1 << 19), ("4096", 4096), (4096, 4096), ("1t", 1 << 40),
    ("1.0000001K", 1024),
])
def test_parse_memory_size(text, n):
    assert sandlock.parse_memory_size(text) == n
    assert "parse_memory_size" in sandlock.__all__


@pytest.mark.parametrize("bad,exc", [
    ("lots", ValueError), ("1.5.2G", ValueError), ("-1M", ValueError), ("0.0001", ValueError),
    ("0", ValueError), ("1e3", ValueError), ("", ValueError), (1.5, TypeError),
    (True, TypeError), ("99999999T", ValueError),
])
def test_parse_memory_size_rejects(bad, exc):
    with pytest.raises(exc):
        sandlock.parse_memory_size(bad)


def test_max_memory_fractional_limits_the_guest():
    sb = sandlock.Sandbox(fs_readable=SYSTEM + ["/proc", "/sys/fs/cgroup"], max_memory="1.5G",
                          timeout=60)
    assert sb.memory_bytes() == 3 << 29
    # the memory cgroup's limit where one is made, else RLIMIT_AS (README, Limits)
    prog = ("import resource\n"
            "print(resource.getrlimit(resource.RLIMIT_AS)[0])\n"
            "for l in open('/proc/self/cgroup'):\n"
            "    n, ctl, path = l.strip().split(':', 2)\n"
            "    if 'memory' in ctl.split(','):\n"
            "        print(open('/sys/fs/cgroup/memory' + path + '/memory.limit_in_bytes').read())\n")
    r = sb.run([PY, "-c", prog])
    assert r.success, r.stderr
    assert 3 << 29 in [int(x) for x in r.stdout.split()]


def test_name_keyword_validated_and_kept():
    assert sandlock.Sandbox(name="web-1").name == "web-1"
    assert sandlock.Sandbox().name is None
    assert sandlock.Sandbox(name="x" * 64).name == "x" * 64
    for bad, exc in (("", ValueError), ("a\0b", ValueError), ("x" * 65, ValueError),
                     ("é" * 33, ValueError), (5, TypeError), (b"web", TypeError)):
        with pytest.raises(exc):
            sandlock.Sandbox(name=bad)
    sb = sandlock.Sandbox(name="a")
    with pytest.raises(ValueError):
        sb.name = "y" * 65
    assert sb.name == "a"
