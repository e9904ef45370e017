"""User handlers for trapped syscalls: Handler, HandlerCtx, NotifAction.

A handler decides a syscall the sandboxed child made.  It is registered with
``Sandbox.run_with_handlers(cmd, [(syscall_name, handler), ...])``; the C
supervisor calls it (through one module-wide ctypes trampoline) from its own
threads, so ``handle`` must be thread-safe and should be fast.  Define
``handle`` as ``async def`` to run it on a deferred worker thread instead.
"""

import asyncio
import ctypes
import dataclasses
import enum
import fcntl
import inspect
import itertools
import logging
import os
import signal as _signal
import threading
from typing import Dict, Optional, Tuple

from . import _native

_lib = _native.lib
_log = logging.getLogger("sandlock")

__all__ = [
    "ActionKind",
    "ExceptionPolicy",
    "Handler",
    "HandlerCtx",
    "NotifAction",
    "PATH_ARG_SYSCALLS",
    "MULTI_PATH_SYSCALLS",
]


class ExceptionPolicy(enum.IntEnum):
    """What the supervisor does when a handler fails (raises, returns a
    non-NotifAction, or cannot be entered)."""

    KILL = 0        # SIGKILL the sandbox's process group, deny the call
    DENY_EPERM = 1  # fail the call with EPERM
    CONTINUE = 2    # "did not intervene": later handlers still run
    DENY_EIO = 3    # fail the call with EIO


class ActionKind(enum.IntEnum):
    """sandlock_action_t.kind (ABI numbers)."""

    UNSET = 0
    CONTINUE = 1
    ERRNO = 2
    RETURN_VALUE = 3
    INJECT_FD_SEND = 4
    INJECT_FD_SEND_TRACKED = 5
    HOLD = 6
    KILL = 7


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_U64_MAX = (1 << 64) - 1
_MAX_ERRNO = 4095
_MAX_READ = 64 << 20  # one read() buffers this much at most
_SIGRTMAX = getattr(_signal, "SIGRTMAX", 64)

# Seals applied by inject_bytes(seal=True): content and size frozen, and no
# further seal changes (so the guest cannot undo them).
_F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
_SEALS = (
    getattr(fcntl, "F_SEAL_SEAL", 0x1)
    | getattr(fcntl, "F_SEAL_SHRINK", 0x2)
    | getattr(fcntl, "F_SEAL_GROW", 0x4)
    | getattr(fcntl, "F_SEAL_WRITE", 0x8)
)
_MFD_CLOEXEC = getattr(os, "MFD_CLOEXEC", 0x1)
_MFD_ALLOW_SEALING = getattr(os, "MFD_ALLOW_SEALING", 0x2)


def _check_int(name, value):
    # bool is an int subclass, but errno(True) is certainly a mistake.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    return int(value)


def _check_newfd_flags(flags):
    flags = _check_int("newfd_flags", flags)
    if flags not in (0, os.O_CLOEXEC):
        raise ValueError("newfd_flags must be 0 or os.O_CLOEXEC, got %#x" % flags)
    return flags


def _check_srcfd(fd):
    fd = _check_int("srcfd", fd)
    if fd < 0:
        raise ValueError("srcfd must be a file descriptor >= 0, got %d" % fd)
    return fd


@dataclasses.dataclass(frozen=True)
class NotifAction:
    """The decision for one trapped syscall.  Build it with the factory
    classmethods; ``kind`` mirrors the C ABI (``ActionKind``)."""

    kind: ActionKind
    value: int = 0          # ERRNO: errno; RETURN_VALUE: the value
    srcfd: int = -1         # INJECT_*: supervisor-side fd (owned by sandlock once returned)
    newfd_flags: int = 0    # INJECT_*: 0 or os.O_CLOEXEC
    tracker: int = 0        # INJECT_FD_SEND_TRACKED: caller's token
    sig: int = 0            # KILL
    pgid: int = 0           # KILL: 0 = the sandbox's own group

    @classmethod
    def continue_(cls) -> "NotifAction":
        """Let the syscall proceed (the kernel re-reads its arguments)."""
        return cls(ActionKind.CONTINUE)

    @classmethod
    def errno(cls, value: int) -> "NotifAction":
        """Fail the syscall with ``-value`` (an errno, 1..4095)."""
        value = _check_int("errno", value)
        if not 1 <= value <= _MAX_ERRNO:
            raise ValueError("errno must be in 1..%d, got %d" % (_MAX_ERRNO, value))
        return cls(ActionKind.ERRNO, value=value)

    @classmethod
    def returns(cls, value: int) -> "NotifAction":
        """Make the syscall return ``value`` without running it."""
        value = _check_int("value", value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError("return value %d does not fit in int64" % value)
        return cls(ActionKind.RETURN_VALUE, value=value)

    @classmethod
    def hold(cls) -> "NotifAction":
        """Leave the call pending; it ends when the run ends."""
        return cls(ActionKind.HOLD)

    @classmethod
    def kill(cls, sig: int = _signal.SIGKILL, pgid: int = 0) -> "NotifAction":
        """Signal the sandbox's process group and deny the call.

        ``pgid`` is accepted for API symmetry, but sandlock only ever signals
        the sandbox's own group; pass 0."""
        sig = _check_int("sig", sig)
        if not 1 <= sig <= _SIGRTMAX:
            raise ValueError("sig must be a signal number in 1..%d, got %d" % (_SIGRTMAX, sig))
        pgid = _check_int("pgid", pgid)
        if pgid < 0:
            raise ValueError("pgid must be >= 0, got %d" % pgid)
        return cls(ActionKind.KILL, sig=sig, pgid=pgid)

    @classmethod
    def inject_fd_send(cls, srcfd: int, newfd_flags: int = os.O_CLOEXEC) -> "NotifAction":
        """Install ``srcfd`` in the child as the syscall's result (a new fd).

        Ownership of ``srcfd`` passes to sandlock when the action is returned
        from ``handle``: do not close it afterwards, whether or not the action
        was dispatched.  ``newfd_flags`` is ``os.O_CLOEXEC`` (default) or 0."""
        return cls(
            ActionKind.INJECT_FD_SEND,
            srcfd=_check_srcfd(srcfd),
            newfd_flags=_check_newfd_flags(newfd_flags),
        )

    @classmethod
    def inject_fd_send_tracked(
        cls, srcfd: int, newfd_flags: int = os.O_CLOEXEC, tracker: int = 0
    ) -> "NotifAction":
        """Like inject_fd_send, with a caller token (u64) for tracking."""
        tracker = _check_int("tracker", tracker)
        if not 0 <= tracker <= _U64_MAX:
            raise ValueError("tracker must fit in uint64")
        return cls(
            ActionKind.INJECT_FD_SEND_TRACKED,
            srcfd=_check_srcfd(srcfd),
            newfd_flags=_check_newfd_flags(newfd_flags),
            tracker=tracker,
        )

    @classmethod
    def inject_bytes(cls, data, *, seal: bool = True, cloexec: bool = True) -> "NotifAction":
        """Serve ``data`` to the guest as the fd its open/openat returns.

        Builds a memfd holding ``data`` (rewound to offset 0), sealed
        read-only and non-resizable unless ``seal=False``, installed with
        O_CLOEXEC unless ``cloexec=False``.  The fd is owned by sandlock
        (do not close it).  Raises OSError if the memfd cannot be made."""
        if isinstance(data, str):
            raise TypeError("inject_bytes needs bytes, not str (encode it first)")
        data = memoryview(data).cast("B")
        fd = os.memfd_create("sandlock-inject", _MFD_CLOEXEC | _MFD_ALLOW_SEALING)
        try:
            off = 0
            while off < len(data):
                off += os.write(fd, data[off:])
            os.lseek(fd, 0, os.SEEK_SET)
            if seal:
                fcntl.fcntl(fd, _F_ADD_SEALS, _SEALS)
        except BaseException:
            os.close(fd)
            raise
        return cls(
            ActionKind.INJECT_FD_SEND,
            srcfd=fd,
            newfd_flags=os.O_CLOEXEC if cloexec else 0,
        )

    def _apply(self, out) -> None:
        """Write this action into a C sandlock_action_t via the ABI setters."""
        k = self.kind
        if k == ActionKind.CONTINUE:
            _lib.sandlock_action_set_continue(out)
        elif k == ActionKind.ERRNO:
            _lib.sandlock_action_set_errno(out, self.value)
        elif k == ActionKind.RETURN_VALUE:
            _lib.sandlock_action_set_return_value(out, self.value)
        elif k == ActionKind.INJECT_FD_SEND:
            _lib.sandlock_action_set_inject_fd_send(out, self.srcfd, self.newfd_flags)
        elif k == ActionKind.INJECT_FD_SEND_TRACKED:
            _lib.sandlock_action_set_inject_fd_send_tracked(
                out, self.srcfd, self.newfd_flags, self.tracker
            )
        elif k == ActionKind.HOLD:
            _lib.sandlock_action_set_hold(out)
        elif k == ActionKind.KILL:
            _lib.sandlock_action_set_kill(out, self.sig, self.pgid)
        else:
            raise ValueError("cannot send an action of kind %r" % (k,))

    def _owns_fd(self) -> bool:
        return self.kind in (ActionKind.INJECT_FD_SEND, ActionKind.INJECT_FD_SEND_TRACKED)


# ---- path-argument table for read_path ----
# Single-path syscalls: name -> index of the path argument.  The first block
# is the documented table; the rest are extensions so the path presets also
# work on openat2/open/creat and friends.
_PATH_ARG_BY_NAME = {
    "openat": 1, "unlinkat": 1, "mkdirat": 1, "newfstatat": 1, "statx": 1,
    "faccessat": 1, "readlinkat": 1, "execveat": 1,
    "open": 0, "unlink": 0, "mkdir": 0, "rmdir": 0, "stat": 0, "lstat": 0,
    "access": 0, "readlink": 0, "execve": 0,
    # extensions
    "openat2": 1, "creat": 0, "faccessat2": 1, "mknodat": 1, "mknod": 0,
    "fchmodat": 1, "chmod": 0, "fchownat": 1, "chown": 0, "lchown": 0,
    "truncate": 0, "chdir": 0, "statfs": 0, "utimensat": 1,
}
# Syscalls carrying two paths: read_path needs an explicit arg=.
_MULTI_PATH_NAMES = (
    "renameat2", "renameat", "rename", "linkat", "link", "symlinkat", "symlink",
)


def _resolve_table():
    by_nr = {}
    for name, idx in _PATH_ARG_BY_NAME.items():
        nr = _native.syscall_nr(name)
        if nr >= 0:  # e.g. aarch64 has no open/stat
            by_nr[nr] = idx
    multi = frozenset(n for n in map(_native.syscall_nr, _MULTI_PATH_NAMES) if n >= 0)
    return by_nr, multi


#: syscall number -> path argument index (native arch), resolved at import.
PATH_ARG_SYSCALLS, MULTI_PATH_SYSCALLS = _resolve_table()


class _MemRef:
    """The C sandlock_mem_t pointer of one callback, and whether it is live.

    Accessors hold the lock for the duration of the C call so that the
    trampoline cannot invalidate (and the C side free) the handle under a
    concurrent reader that kept the ctx."""

    __slots__ = ("ptr", "lock")

    def __init__(self, ptr):
        self.ptr = ptr
        self.lock = threading.Lock()

    def kill(self):
        with self.lock:
            self.ptr = None


@dataclasses.dataclass(frozen=True)
class HandlerCtx:
    """One trapped syscall: the notification fields and child-memory accessors.

    The accessors work only while the handler runs (for an ``async`` handler:
    for the whole coroutine).  A ctx kept past that is stale: reads return
    None and writes False."""

    id: int
    pid: int
    flags: int
    syscall_nr: int
    arch: int
    instruction_pointer: int
    args: Tuple[int, int, int, int, int, int]
    _mem: _MemRef = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def syscall_name(self) -> Optional[str]:
        return _native.syscall_name(self.syscall_nr)

    def _call(self, fn, *a):
        m = self._mem
        if m is None:
            return None
        with m.lock:
            if not m.ptr:
                return None
            return fn(m.ptr, *a)

    def read_cstr(self, addr: int, max_len: int = 4096) -> Optional[str]:
        """NUL-terminated string at ``addr`` (decoded like a filename, with
        surrogateescape), or None if unreadable, longer than ``max_len`` or
        the ctx is stale."""
        addr, max_len = _check_addr(addr), _check_len("max_len", max_len)
        raw = self._call(lambda p: _native.take_string(_lib.sandlock_mem_read_cstr(p, addr, max_len)))
        return None if raw is None else os.fsdecode(raw)

    def read(self, addr: int, length: int) -> Optional[bytes]:
        """``length`` raw bytes at ``addr``, or None on failure."""
        addr, length = _check_addr(addr), _check_len("length", length, allow_zero=True)
        if length > _MAX_READ:
            raise ValueError("length %d exceeds the %d-byte read limit" % (length, _MAX_READ))
        buf = ctypes.create_string_buffer(length or 1)

        def rd(p):
            if _lib.sandlock_mem_read(p, addr, buf, length) != 0:
                return None
            return buf.raw[:length]

        return self._call(rd)

    def write(self, addr: int, data) -> bool:
        """Write ``data`` (bytes-like) into the child at ``addr``."""
        addr = _check_addr(addr)
        if isinstance(data, str):
            raise TypeError("write needs bytes, not str")
        data = bytes(data)
        r = self._call(lambda p: _lib.sandlock_mem_write(p, addr, data, len(data)))
        return r == 0

    def read_path(self, arg: Optional[int] = None, max_len: int = 4096) -> Optional[str]:
        """The path argument of this syscall, as the child passed it.

        With ``arg=None`` the argument index comes from the syscall table
        (see PATH_ARG_SYSCALLS); multi-path syscalls (rename*, link*,
        symlink*) and syscalls not in the table raise ValueError — pass
        ``arg=`` explicitly for those.  The string is NOT resolved: relative
        paths stay relative to the child's cwd or dirfd."""
        if arg is None:
            nr = self.syscall_nr
            if nr in MULTI_PATH_SYSCALLS:
                raise ValueError(
                    "syscall %s takes two paths: call read_path(arg=...) explicitly"
                    % (self.syscall_name or nr)
                )
            if nr not in PATH_ARG_SYSCALLS:
                raise ValueError(
                    "syscall %s is not in the path table: pass read_path(arg=...)"
                    % (self.syscall_name or nr)
                )
            arg = PATH_ARG_SYSCALLS[nr]
        else:
            arg = _check_int("arg", arg)
            if not 0 <= arg <= 5:
                raise ValueError("arg must be in 0..5, got %d" % arg)
        return self.read_cstr(self.args[arg], max_len)


def _check_addr(addr):
    addr = _check_int("addr", addr)
    if not 0 <= addr <= _U64_MAX:
        raise ValueError("addr out of range")
    return addr


def _check_len(name, n, allow_zero=False):
    n = _check_int(name, n)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError("%s must be %s, got %d" % (name, ">= 0" if allow_zero else "> 0", n))
    return n


class Handler:
    """Base class: subclass and override ``handle(ctx) -> NotifAction``.

    ``handle`` may be ``async def``: it then runs on a deferred worker thread
    (the supervisor loop stays free) in a per-thread event loop, and the ctx
    stays valid across awaits.  ``on_exception`` chooses what a failure of
    the handler turns into (default: kill the sandbox)."""

    on_exception = ExceptionPolicy.KILL

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        raise NotImplementedError("Handler subclasses must override handle(ctx)")


# =====================================================================
# The trampoline: one CFUNCTYPE for every handler of every run.
#
# Each C handler's user data is a small malloc'd cell holding an integer key
# into _registry; the entry holds strong references to the Handler and its
# run.  The C side releases the cell with libc free() (its ud_free, called
# exactly once per handler on every path), and the run releases the Python
# references when sandlock_run_with_handlers returns.
#
# Why not a Python ud_free: C calls ud_free when a run ends, and a run can
# end while the interpreter is finalizing (a daemon thread's run whose child
# the guard's KILL policy just killed).  Entering Python through a ctypes
# callback at that point crashes in PyThreadState_New; libc free needs no
# interpreter.  The guard (Py_IsInitialized) protects the handler calls.
# =====================================================================

class _RunState:
    """Per-run state shared by its handlers: event loops of deferred workers.

    Loops are keyed by OS thread id, not threading.local: ctypes gives a
    C-created thread a fresh Python thread state on every callback, so
    thread-locals would not survive between calls."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loops = {}  # type: Dict[int, asyncio.AbstractEventLoop]

    def run_coroutine(self, coro):
        tid = threading.get_ident()
        with self._lock:
            loop = self._loops.get(tid)
            if loop is None:
                loop = self._loops[tid] = asyncio.new_event_loop()
        return loop.run_until_complete(coro)

    def close(self):
        with self._lock:
            loops, self._loops = list(self._loops.values()), {}
        for loop in loops:
            try:
                loop.close()
            except Exception:  # a loop still running on a wedged worker
                pass


class _Entry:
    __slots__ = ("handler", "run")

    def __init__(self, handler, run):
        self.handler = handler
        self.run = run


_registry = {}  # type: Dict[int, _Entry]
_registry_lock = threading.Lock()
_keys = itertools.count(1)

_libc = ctypes.CDLL(None)
_libc.malloc.restype = ctypes.c_void_p
_libc.malloc.argtypes = [ctypes.c_size_t]
_libc.free.restype = None
_libc.free.argtypes = [ctypes.c_void_p]


def _register(handler, run) -> int:
    with _registry_lock:
        key = next(_keys)
        _registry[key] = _Entry(handler, run)
    return key


def _unregister(key) -> bool:
    with _registry_lock:
        return _registry.pop(key, None) is not None


def _key_of(ud) -> int:
    return ctypes.c_uint64.from_address(ud).value


def _trampoline(ud, notif_p, mem, out):
    # Never let an exception escape: ctypes would print it and return 0 with
    # the action UNSET.  Any failure -> non-zero -> the exception policy.
    ref = None
    action = None
    try:
        entry = _registry.get(_key_of(ud)) if ud else None
        if entry is None:
            return 1
        n = notif_p.contents
        ref = _MemRef(mem)
        ctx = HandlerCtx(
            int(n.id), int(n.pid), int(n.flags), int(n.syscall_nr), int(n.arch),
            int(n.instruction_pointer), tuple(int(a) for a in n.args), ref,
        )
        action = entry.handler.handle(ctx)
        if inspect.isawaitable(action):
            action = entry.run.run_coroutine(action)
        if not isinstance(action, NotifAction):
            _log.debug("handler %r returned %r, not a NotifAction", entry.handler, action)
            return 1
        action._apply(out)
        action = None  # handed over: an injected fd now belongs to the C side
        return 0
    except BaseException:
        try:
            _log.debug("sandlock handler raised", exc_info=True)
        except BaseException:
            pass
        return 1
    finally:
        if ref is not None:
            ref.kill()
        # An inject action that was produced but not handed over: the caller
        # gave up the fd, so nobody else will close it.
        if isinstance(action, NotifAction) and action._owns_fd():
            try:
                os.close(action.srcfd)
            except OSError:
                pass


_TRAMPOLINE = _native.HANDLER_FN(_trampoline)
# libc free as a C function pointer (no Python involved when C calls it).
_UD_FREE = _native.UD_FREE_FN(ctypes.cast(_libc.free, ctypes.c_void_p).value)
_GUARD = _native.guard_address()


def _is_async(handler) -> bool:
    fn = getattr(handler, "handle", None)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(handler), "handle", None)
    )


def _validate_handler(handler):
    if not isinstance(handler, Handler):
        raise TypeError("handler must be a sandlock.Handler, not %s" % type(handler).__name__)
    if getattr(type(handler), "handle", None) is Handler.handle and "handle" not in getattr(
        handler, "__dict__", {}
    ):
        raise TypeError("%s does not override handle(ctx)" % type(handler).__name__)
    try:
        return ExceptionPolicy(handler.on_exception)
    except (ValueError, TypeError):
        raise ValueError(
            "%s.on_exception must be an ExceptionPolicy, got %r"
            % (type(handler).__name__, handler.on_exception)
        ) from None


def _make_c_handler(handler, policy, run):
    """Create the C handler for one Handler instance.  Returns (ptr, key).
    The caller owns ptr until it passes it to sandlock_run_with_handlers
    (or frees it with sandlock_handler_free), and must _unregister(key)
    once the run is over."""
    cell = _libc.malloc(8)
    if not cell:
        raise MemoryError("malloc failed")
    key = _register(handler, run)
    ctypes.c_uint64.from_address(cell).value = key
    h = _lib.sandlock_handler_new(_TRAMPOLINE, cell, _UD_FREE, int(policy))
    if not h:  # ud_free is not called in this case: we still own the cell
        _libc.free(cell)
        _unregister(key)
        raise MemoryError("sandlock_handler_new failed")
    _lib.sandlock_handler_set_guard(h, _GUARD)
    if _is_async(handler):
        _lib.sandlock_handler_set_deferred(h, True)
    return h, key
