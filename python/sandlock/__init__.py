"""sandlock: run a command confined by Landlock + seccomp, from Python.

    import sandlock
    sb = sandlock.Sandbox(fs_readable=["/usr", "/lib", "/lib64", "/etc", "/bin"])
    r = sb.run(["/bin/cat", "/etc/hostname"])
    print(r.success, r.stdout)

Errors: invalid Python arguments raise TypeError/ValueError at once; a
configuration or launch failure reported by the C library raises
SandlockError (a plain Exception subclass, NOT OSError: its ``code`` is a
SANDLOCK_ERR_* number, not an errno).  Preset handlers live in
``sandlock.presets`` and are deliberately not re-exported here.
"""

import ctypes
import dataclasses
import enum
import os
import re
import threading
from collections.abc import Iterable as _IterableABC, Mapping as _MappingABC
from typing import Iterable, Mapping, Optional, Sequence, Tuple

from . import _native
from .handler import (
    ExceptionPolicy,
    Handler,
    HandlerCtx,
    NotifAction,
    _make_c_handler,
    _RunState,
    _unregister,
    _validate_handler,
)

__version__ = "0.1.0"

__all__ = [
    "ExceptionPolicy",
    "ExitReason",
    "Handler",
    "HandlerCtx",
    "NotifAction",
    "Result",
    "Sandbox",
    "SandlockError",
    "landlock_abi_version",
]

_lib = _native.lib


class SandlockError(Exception):
    """A failure reported by libsandlock.

    ``code`` is the SANDLOCK_ERR_* number (``code_name`` its name, e.g.
    "NOT_FOUND"), ``message`` the library's explanation."""

    def __init__(self, code: int, message: str):
        self.code = int(code)
        self.code_name = _native.ERR_NAMES.get(self.code, "UNKNOWN")
        self.message = message
        super().__init__("%s (%s): %s" % (self.code_name, self.code, message))


def _raise_from(err, msg, what):
    text = _native.take_string(msg.value)
    text = text.decode(errors="replace") if text else what + " failed"
    raise SandlockError(err.value or 7, text)


class ExitReason(str, enum.Enum):
    """How the command ended; compares equal to its string value."""

    EXITED = "exited"
    SIGNALED = "signaled"
    KILLED = "killed"    # by sandlock: a handler KILL action or KILL policy
    TIMEOUT = "timeout"

    def __str__(self):
        return self.value


_REASONS = {0: ExitReason.EXITED, 1: ExitReason.SIGNALED, 2: ExitReason.KILLED,
            3: ExitReason.TIMEOUT}


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of one run (immutable)."""

    success: bool
    exit_code: int  # status if exited; 128+signal if signaled/killed; 124 on timeout
    reason: ExitReason
    signal: int     # 0 unless a signal ended the command
    stdout: bytes
    stderr: bytes


def _take_result(r) -> Result:
    try:
        def grab(fn):
            n = ctypes.c_size_t(0)
            p = fn(r, ctypes.byref(n))
            return ctypes.string_at(p, n.value) if p and n.value else b""

        code = _lib.sandlock_result_reason(r)
        return Result(
            success=bool(_lib.sandlock_result_success(r)),
            exit_code=int(_lib.sandlock_result_exit_code(r)),
            reason=_REASONS.get(code, ExitReason.SIGNALED),
            signal=int(_lib.sandlock_result_signal(r)),
            stdout=grab(_lib.sandlock_result_stdout_bytes),
            stderr=grab(_lib.sandlock_result_stderr_bytes),
        )
    finally:
        _lib.sandlock_result_free(r)


# ---- argument validation ----
def _path_list(name, value) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("%s must be a list of paths, not a single %s" % (name, type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise TypeError("%s must be a list of paths, not %s" % (name, type(value).__name__)) from None
    return tuple(_path(name, p) for p in items)


def _path(name, p) -> str:
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError("%s: expected a path (str), got %s" % (name, type(p).__name__))
    s = os.fsdecode(os.fspath(p))
    if not s:
        raise ValueError("%s: empty path" % name)
    if "\0" in s:
        raise ValueError("%s: path contains a NUL byte" % name)
    return s


def _ports(name, value) -> Tuple[int, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError("%s must be a list of ports, not a %s" % (name, type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise TypeError("%s must be a list of ports, not %s" % (name, type(value).__name__)) from None
    out = []
    for p in items:
        if not isinstance(p, int) or isinstance(p, bool):
            raise TypeError("%s: port must be an int, got %r" % (name, p))
        if not 1 <= p <= 65535:
            raise ValueError("%s: port %d out of range 1..65535" % (name, p))
        out.append(int(p))
    return tuple(out)


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value) -> int:
    """int bytes, or a str like "64M", "1G", "512k", "4096" (binary units)."""
    if isinstance(value, bool):
        raise TypeError("max_memory must be an int or a size string, not bool")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        m = _SIZE_RE.match(value)
        if not m:
            raise ValueError("max_memory: cannot parse size %r (use e.g. '64M', '1G')" % value)
        n = int(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    else:
        raise TypeError("max_memory must be an int or a size string, not %s" % type(value).__name__)
    if n <= 0 or n >= 1 << 64:
        raise ValueError("max_memory must be > 0 bytes, got %d" % n)
    return n


def _timeout(value) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("timeout must be a number of seconds, not %s" % type(value).__name__)
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError("timeout must be a positive finite number of seconds, got %r" % value)
    return float(value)


def _argv(cmd) -> Tuple[bytes, ...]:
    if isinstance(cmd, (str, bytes)):
        raise TypeError("cmd must be a list of str (e.g. ['/bin/ls', '-l']), not a single string")
    try:
        items = list(cmd)
    except TypeError:
        raise TypeError("cmd must be a list of str, not %s" % type(cmd).__name__) from None
    if not items:
        raise ValueError("cmd must not be empty")
    out = []
    for a in items:
        if not isinstance(a, (str, bytes, os.PathLike)):
            raise TypeError("cmd items must be str, got %s" % type(a).__name__)
        b = os.fsencode(a)
        if b"\0" in b:
            raise ValueError("cmd item contains a NUL byte: %r" % (a,))
        out.append(b)
    if not out[0]:
        raise ValueError("cmd[0] must not be empty")
    return tuple(out)


class Sandbox:
    """A reusable sandbox configuration.

    Paths must exist (they are resolved at construction, which also reports
    configuration errors as SandlockError).  ``max_memory`` is bytes (int)
    or a size string ("64M", "1G"); ``net_allow``/``net_allow_bind`` are the
    TCP ports the command may connect to / bind (everything else is denied);
    ``timeout`` is seconds.  ``env`` holds variables to set on top of the
    inherited environment (or on top of nothing with ``clean_env=True``).
    Instances are immutable after construction and safe to share between
    threads."""

    def __init__(
        self,
        fs_readable: Iterable = (),
        fs_writable: Iterable = (),
        fs_denied: Iterable = (),
        cwd=None,
        env: Optional[Mapping[str, str]] = None,
        clean_env: bool = False,
        max_processes: Optional[int] = None,
        max_memory=None,
        net_allow: Iterable[int] = (),
        net_allow_bind: Iterable[int] = (),
        timeout: Optional[float] = None,
    ):
        self.fs_readable = _path_list("fs_readable", fs_readable)
        self.fs_writable = _path_list("fs_writable", fs_writable)
        self.fs_denied = _path_list("fs_denied", fs_denied)
        self.cwd = None if cwd is None else _path("cwd", cwd)
        if env is None:
            env = {}
        if not isinstance(env, _MappingABC):
            raise TypeError("env must be a dict of str -> str, not %s" % type(env).__name__)
        for k, v in env.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("env keys and values must be str, got %r=%r" % (k, v))
            if not k or "=" in k or "\0" in k or "\0" in v:
                raise ValueError("invalid environment variable %r" % k)
        self.env = dict(env)
        if not isinstance(clean_env, bool):
            raise TypeError("clean_env must be a bool")
        self.clean_env = clean_env
        if max_processes is not None:
            if not isinstance(max_processes, int) or isinstance(max_processes, bool):
                raise TypeError("max_processes must be an int")
            if not 1 <= max_processes <= 0xFFFFFFFF:
                raise ValueError("max_processes must be >= 1, got %d" % max_processes)
        self.max_processes = max_processes
        self.max_memory = None if max_memory is None else parse_size(max_memory)
        self.net_allow = _ports("net_allow", net_allow)
        self.net_allow_bind = _ports("net_allow_bind", net_allow_bind)
        self.timeout = _timeout(timeout)
        # Build once now so a bad configuration fails here, not at run().
        self._native = _NativeSandbox(self._build(self.timeout))

    def __repr__(self):
        return "Sandbox(fs_readable=%r, fs_writable=%r, timeout=%r)" % (
            list(self.fs_readable), list(self.fs_writable), self.timeout)

    def _build(self, timeout):
        b = _lib.sandlock_sandbox_builder_new()
        if not b:
            raise MemoryError("sandlock_sandbox_builder_new failed")
        enc = os.fsencode
        for p in self.fs_readable:
            b = _lib.sandlock_sandbox_builder_fs_read(b, enc(p))
        for p in self.fs_writable:
            b = _lib.sandlock_sandbox_builder_fs_write(b, enc(p))
        for p in self.fs_denied:
            b = _lib.sandlock_sandbox_builder_fs_deny(b, enc(p))
        if self.cwd is not None:
            b = _lib.sandlock_sandbox_builder_cwd(b, enc(self.cwd))
        if self.clean_env:
            b = _lib.sandlock_sandbox_builder_clean_env(b, True)
        for k, v in self.env.items():
            b = _lib.sandlock_sandbox_builder_env_var(b, enc(k), enc(v))
        if self.max_processes is not None:
            b = _lib.sandlock_sandbox_builder_max_processes(b, self.max_processes)
        if self.max_memory is not None:
            b = _lib.sandlock_sandbox_builder_max_memory(b, self.max_memory)
        for p in self.net_allow:
            b = _lib.sandlock_sandbox_builder_net_allow(b, p)
        for p in self.net_allow_bind:
            b = _lib.sandlock_sandbox_builder_net_allow_bind(b, p)
        if timeout is not None:
            b = _lib.sandlock_sandbox_builder_timeout_ms(b, max(1, int(round(timeout * 1000))))
        err, msg = _native.error_out()
        sb = _lib.sandlock_sandbox_build(b, ctypes.byref(err), ctypes.byref(msg))
        if not sb:
            _raise_from(err, msg, "sandlock_sandbox_build")
        return sb

    def _sandbox_for(self, timeout):
        """(native sandbox, owned?) for a run with this timeout override."""
        timeout = _timeout(timeout)
        if timeout is None or timeout == self.timeout:
            return self._native, None
        tmp = _NativeSandbox(self._build(timeout))
        return tmp, tmp

    def run(self, cmd: Sequence[str], timeout: Optional[float] = None) -> Result:
        """Run cmd (a list of str) in the sandbox and wait for it."""
        argv = _argv(cmd)
        nsb, tmp = self._sandbox_for(timeout)
        try:
            arr = (ctypes.c_char_p * len(argv))(*argv)
            err, msg = _native.error_out()
            r = _lib.sandlock_run(nsb.ptr, arr, len(argv), ctypes.byref(err), ctypes.byref(msg))
            if not r:
                _raise_from(err, msg, "sandlock_run")
            return _take_result(r)
        finally:
            if tmp is not None:
                tmp.close()

    def run_with_handlers(
        self,
        cmd: Sequence[str],
        handlers: Iterable[Tuple[str, Handler]],
        timeout: Optional[float] = None,
    ) -> Result:
        """Run cmd with user handlers: ``handlers`` is a list of
        ``(syscall_name, Handler)`` pairs, called in registration order
        after sandlock's built-in handlers for that syscall.  The Sandbox
        holds strong references to the handlers until the run completes."""
        argv = _argv(cmd)
        if isinstance(handlers, (str, bytes)) or not isinstance(handlers, _IterableABC):
            raise TypeError("handlers must be a list of (syscall_name, Handler) pairs")
        pairs = []
        for item in handlers:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError("each handler entry must be a (syscall_name, Handler) pair, got %r" % (item,))
            name, h = item
            if not isinstance(name, str):
                raise TypeError("syscall name must be a str, got %r" % (name,))
            if not name or "\0" in name:
                raise ValueError("invalid syscall name %r" % name)
            pairs.append((name.encode(), h, _validate_handler(h)))
        nsb, tmp = self._sandbox_for(timeout)
        run = _RunState()
        made = {}  # id(handler) -> (c ptr, key); one C handler per instance
        try:
            try:
                for _name, h, policy in pairs:
                    if id(h) not in made:
                        made[id(h)] = _make_c_handler(h, policy, run)
            except BaseException:
                for ptr, _key in made.values():
                    _lib.sandlock_handler_free(ptr)  # frees the key cell
                raise
            regs = (_native.Registration * max(1, len(pairs)))()
            for i, (name, h, _policy) in enumerate(pairs):
                regs[i].syscall = name
                regs[i].handler = made[id(h)][0]
            arr = (ctypes.c_char_p * len(argv))(*argv)
            err, msg = _native.error_out()
            # From here on the C side owns every handler, on every path.
            r = _lib.sandlock_run_with_handlers(
                nsb.ptr, arr, len(argv), regs, len(pairs), ctypes.byref(err), ctypes.byref(msg)
            )
            if not r:
                _raise_from(err, msg, "sandlock_run_with_handlers")
            return _take_result(r)
        finally:
            # The run is over (its deferred workers too): release the
            # strong references to the handlers.
            for _ptr, key in made.values():
                _unregister(key)
            run.close()
            if tmp is not None:
                tmp.close()


class _NativeSandbox:
    """Owns a sandlock_sandbox_t; freed on close() or garbage collection."""

    def __init__(self, ptr):
        self.ptr = ptr
        self._lock = threading.Lock()

    def close(self):
        with self._lock:
            p, self.ptr = self.ptr, None
        if p:
            _lib.sandlock_sandbox_free(p)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def landlock_abi_version() -> int:
    """Landlock ABI of the running kernel, or -1 when unavailable."""
    return int(_lib.sandlock_landlock_abi_version())
