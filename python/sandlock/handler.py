"""User handlers for trapped syscalls: Handler, HandlerCtx, NotifAction.

A handler decides a syscall the sandboxed child made.  It is registered with
``Sandbox.run_with_handlers(cmd, [(syscall, handler), ...])`` (a syscall
name or number); the C
supervisor calls it (through one module-wide ctypes trampoline) from its own
threads, so ``handle`` must be thread-safe and should be fast.  Define
``handle`` as ``async def`` to run it on a deferred worker thread instead.
"""

import asyncio
import types
import ctypes
import dataclasses
import enum
import fcntl
import inspect
import itertools
import logging
import os
import signal as _signal
import struct
import threading
from typing import Dict, Optional, Tuple

from . import _native
from .exceptions import PolicyTypeError, PolicyValueError

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
# ActionKind values as plain ints: comparing with these is much cheaper
# than looking up ActionKind.X on the hot path.
_K_CONTINUE, _K_ERRNO, _K_RETURN_VALUE = 1, 2, 3
_K_INJECT_FD_SEND, _K_INJECT_FD_SEND_TRACKED, _K_HOLD, _K_KILL = 4, 5, 6, 7
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
    classmethods; ``kind`` mirrors the C ABI (``ActionKind``).  Fields a
    kind does not use keep their defaults."""

    kind: ActionKind
    errno_value: int = 0    # ERRNO: the errno (1..4095)
    return_value: int = 0   # RETURN_VALUE: what the syscall returns
    srcfd: int = -1         # INJECT_*: supervisor-side fd (owned by sandlock once returned)
    newfd_flags: int = 0    # INJECT_*: 0 or os.O_CLOEXEC
    tracker: int = 0        # INJECT_FD_SEND_TRACKED: caller's token
    sig: int = 0            # KILL
    pgid: int = 0           # KILL: 0 = the sandbox's own group

    @property
    def value(self) -> int:
        """errno_value for ERRNO, return_value for RETURN_VALUE, else 0
        (the single field of earlier versions)."""
        if self.kind == _K_ERRNO:
            return self.errno_value
        if self.kind == _K_RETURN_VALUE:
            return self.return_value
        return 0

    @classmethod
    def continue_(cls) -> "NotifAction":
        """Let the syscall proceed (the kernel re-reads its arguments)."""
        if cls is NotifAction:
            return _CONTINUE  # immutable, so one shared instance will do
        return cls(ActionKind.CONTINUE)

    @classmethod
    def errno(cls, value: int) -> "NotifAction":
        """Fail the syscall with ``-value`` (an errno, 1..4095)."""
        value = _check_int("errno", value)
        if not 1 <= value <= _MAX_ERRNO:
            raise ValueError("errno must be in 1..%d, got %d" % (_MAX_ERRNO, value))
        if cls is NotifAction:
            return _new_action(ActionKind.ERRNO, "errno_value", value)
        return cls(ActionKind.ERRNO, errno_value=value)

    @classmethod
    def returns(cls, value: int) -> "NotifAction":
        """Make the syscall return ``value`` without running it."""
        value = _check_int("value", value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError("return value %d does not fit in int64" % value)
        if cls is NotifAction:
            return _new_action(ActionKind.RETURN_VALUE, "return_value", value)
        return cls(ActionKind.RETURN_VALUE, return_value=value)

    @classmethod
    def hold(cls) -> "NotifAction":
        """Leave the call pending; it ends when the run ends."""
        if cls is NotifAction:
            return _HOLD
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
    def inject_fd_send(cls, srcfd: int, newfd_flags: int = 0) -> "NotifAction":
        """Install ``srcfd`` in the child as the syscall's result (a new fd).

        Ownership of ``srcfd`` passes to sandlock when the action is returned
        from ``handle``: do not close it afterwards, whether or not the action
        was dispatched.  ``newfd_flags`` is 0 (default: the new fd survives
        the guest's execve, as the reference does) or ``os.O_CLOEXEC``; pass
        the guest's own O_CLOEXEC choice (from the open flags) to mirror it.
        (``inject_bytes`` defaults to O_CLOEXEC instead.)"""
        return cls(
            ActionKind.INJECT_FD_SEND,
            srcfd=_check_srcfd(srcfd),
            newfd_flags=_check_newfd_flags(newfd_flags),
        )

    @classmethod
    def inject_fd_send_tracked(
        cls, srcfd: int, newfd_flags: int = 0, tracker: int = 0
    ) -> "NotifAction":
        """Like inject_fd_send (same ``newfd_flags`` default, 0), with a
        caller token (u64) for tracking."""
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

    def _apply(self, out: int) -> None:
        """Write this action into the C sandlock_action_t at address ``out``.

        The 24-byte layout is ABI (sandlock.h), so this packs all of it at
        once, zeroing unused bytes exactly like the C setters do; that is
        several times cheaper than a ctypes call per setter.  Out-of-range
        field values (only possible by calling the constructor directly
        instead of a factory) raise struct.error: a handler error."""
        k = self.kind
        if k == _K_CONTINUE or k == _K_HOLD:
            _ACT_KIND.pack_into(_Out.from_address(out), 0, k)
        elif k == _K_ERRNO:
            _ACT_ERRNO.pack_into(_Out.from_address(out), 0, k, self.errno_value)
        elif k == _K_RETURN_VALUE:
            _ACT_RETURN.pack_into(_Out.from_address(out), 0, k, self.return_value)
        elif k == _K_INJECT_FD_SEND:
            _ACT_INJECT.pack_into(_Out.from_address(out), 0, k, self.srcfd, self.newfd_flags, 0)
        elif k == _K_INJECT_FD_SEND_TRACKED:
            _ACT_INJECT.pack_into(
                _Out.from_address(out), 0, k, self.srcfd, self.newfd_flags, self.tracker
            )
        elif k == _K_KILL:
            _ACT_KILL.pack_into(_Out.from_address(out), 0, k, self.sig, self.pgid)
        else:
            raise ValueError("cannot send an action of kind %r" % (k,))

    def _owns_fd(self) -> bool:
        return self.kind in (_K_INJECT_FD_SEND, _K_INJECT_FD_SEND_TRACKED)


# struct sandlock_action (sandlock.h): kind u32, reserved u32, then a 16-byte
# union.  "=" is native byte order with no implicit padding; "x" bytes are
# written as zeros.
_Out = ctypes.c_char * 24
_ACT_KIND = struct.Struct("=I4x16x")
_ACT_ERRNO = struct.Struct("=I4xi12x")
_ACT_RETURN = struct.Struct("=I4xq8x")
_ACT_INJECT = struct.Struct("=I4xiIQ")
_ACT_KILL = struct.Struct("=I4xii8x")
assert all(s.size == ctypes.sizeof(_native.Action)
           for s in (_ACT_KIND, _ACT_ERRNO, _ACT_RETURN, _ACT_INJECT, _ACT_KILL))
assert [int(k) for k in (ActionKind.CONTINUE, ActionKind.ERRNO, ActionKind.RETURN_VALUE,
                         ActionKind.INJECT_FD_SEND, ActionKind.INJECT_FD_SEND_TRACKED,
                         ActionKind.HOLD, ActionKind.KILL)] == [
    _K_CONTINUE, _K_ERRNO, _K_RETURN_VALUE, _K_INJECT_FD_SEND, _K_INJECT_FD_SEND_TRACKED,
    _K_HOLD, _K_KILL]

_object_new = object.__new__
_object_setattr = object.__setattr__
_ACTION_DEFAULTS = {
    f.name: f.default for f in dataclasses.fields(NotifAction) if f.name != "kind"
}


def _new_action(kind, field, value):
    """NotifAction(kind, field=value) without the frozen dataclass __init__
    (one object.__setattr__ per field): the instance is identical, it is
    just filled in one step."""
    a = _object_new(NotifAction)
    d = {"kind": kind}  # same key order as __init__ would give
    d.update(_ACTION_DEFAULTS)
    d[field] = value
    _object_setattr(a, "__dict__", d)
    return a


_CONTINUE = NotifAction(ActionKind.CONTINUE)
_HOLD = NotifAction(ActionKind.HOLD)


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
        # Re-entrant: open_on_behalf's allow callback runs inside a C call
        # made under the lock and may use the ctx's accessors.
        self.lock = threading.RLock()

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
        raw = self._call(lambda p: _native.take_string(_lib.sandlock_mem_read_string(p, addr, max_len)))
        return None if raw is None else os.fsdecode(raw)

    def read(self, addr: int, length: int) -> Optional[bytes]:
        """``length`` raw bytes at ``addr``, or None on failure."""
        addr, length = _check_addr(addr), _check_len("length", length, allow_zero=True)
        if length > _MAX_READ:
            raise ValueError("length %d exceeds the %d-byte read limit" % (length, _MAX_READ))
        buf = ctypes.create_string_buffer(length or 1)

        def rd(p):
            if _lib.sandlock_mem_peek(p, addr, buf, length) != 0:
                return None
            return buf.raw[:length]

        return self._call(rd)

    def write(self, addr: int, data) -> bool:
        """Write ``data`` (bytes-like) into the child at ``addr``."""
        addr = _check_addr(addr)
        if isinstance(data, str):
            raise TypeError("write needs bytes, not str")
        data = bytes(data)
        r = self._call(lambda p: _lib.sandlock_mem_poke(p, addr, data, len(data)))
        return r == 0

    def read_path(self, arg: Optional[int] = None, max_len: int = 4096) -> Optional[str]:
        """The path argument of this syscall, as the child passed it.

        With ``arg=None`` the argument index comes from the syscall table
        (see PATH_ARG_SYSCALLS); multi-path syscalls (rename*, link*,
        symlink*) and syscalls not in the table raise ValueError whose
        message says to pass ``arg=`` explicitly.  The string is NOT resolved: relative
        paths stay relative to the child's cwd or dirfd."""
        if arg is None:
            nr = self.syscall_nr
            if nr in MULTI_PATH_SYSCALLS:
                raise ValueError(
                    "syscall %s takes two paths: pass arg= explicitly (read_path(arg=N))"
                    % (self.syscall_name or nr)
                )
            if nr not in PATH_ARG_SYSCALLS:
                raise ValueError(
                    "syscall %s is not in read_path's path table: pass arg= explicitly "
                    "(read_path(arg=N))" % (self.syscall_name or nr)
                )
            arg = PATH_ARG_SYSCALLS[nr]
        else:
            arg = _check_int("arg", arg)
            if not 0 <= arg <= 5:
                raise ValueError("arg must be in 0..5, got %d" % arg)
        return self.read_cstr(self.args[arg], max_len)



# ---- opening on the caller's behalf (sandlock_open_on_behalf) ----
class _Opened(ctypes.Structure):
    """struct sandlock_opened (sandlock.h)."""

    _fields_ = [
        ("fd", ctypes.c_int32),
        ("newfd_flags", ctypes.c_uint32),
        ("dev", ctypes.c_uint64),
        ("ino", ctypes.c_uint64),
        ("path", ctypes.c_void_p),  # char *, freed with sandlock_string_free
    ]


_OPEN_CHECK_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(_Opened))
_open_on_behalf = _lib.sandlock_open_on_behalf
_open_on_behalf.restype = ctypes.c_int32
_open_on_behalf.argtypes = [ctypes.c_void_p, ctypes.POINTER(_native.Notif), _OPEN_CHECK_FN,
                            ctypes.c_void_p, ctypes.POINTER(_Opened)]
_NO_CHECK = _OPEN_CHECK_FN()  # NULL: no check
_OPEN_FAMILY = frozenset(
    n for n in map(_native.syscall_nr, ("open", "creat", "openat", "openat2")) if n >= 0
)


def _ctx_open_on_behalf(ctx, allow=None, errno=None):
    if ctx.syscall_nr not in _OPEN_FAMILY:
        raise ValueError(
            "open_on_behalf needs an open, creat, openat or openat2 call, not %s"
            % (ctx.syscall_name or ctx.syscall_nr)
        )
    if allow is not None and not callable(allow):
        raise TypeError("allow must be callable")
    deny = _ERRNO_EACCES if errno is None else NotifAction.errno(errno).value
    n = _native.Notif(ctx.id, ctx.pid, ctx.flags, ctx.syscall_nr, ctx.arch,
                      ctx.instruction_pointer, (ctypes.c_uint64 * 6)(*ctx.args))
    o = _Opened()
    # allow runs inside the C call (the check), before O_TRUNC/O_CREAT take
    # effect; what it said is carried out here, after the call returns.
    outcome = []  # [NotifAction to answer with] or [exception to re-raise]

    def check(_ud, file):
        try:
            f = file.contents
            verdict = allow(os.fsdecode(ctypes.string_at(f.path)), os.fstat(f.fd))
        except BaseException as e:  # never into C: refuse, re-raise below
            outcome.append(e)
            return _ERRNO_EACCES
        if isinstance(verdict, NotifAction):
            outcome.append(verdict)
            return _ERRNO_EACCES
        return 0 if verdict else deny

    cb = _NO_CHECK if allow is None else _OPEN_CHECK_FN(check)
    e = ctx._call(lambda p: _open_on_behalf(p, ctypes.byref(n), cb, None, ctypes.byref(o)))
    if outcome and isinstance(outcome[0], BaseException):
        if e == 0:
            os.close(o.fd)
            _native.take_string(o.path)
        raise outcome[0]
    if outcome:  # allow answered with its own action
        if e == 0:  # cannot happen: the check refused
            os.close(o.fd)
            _native.take_string(o.path)
        return outcome[0]
    if e is None:  # stale ctx: nobody waits for this answer any more
        return NotifAction.errno(_ERRNO_ESRCH)
    if e != 0:
        return NotifAction.errno(e)
    _native.take_string(o.path)
    return NotifAction.inject_fd_send(o.fd, o.newfd_flags)


_ERRNO_EACCES = 13
_ERRNO_ESRCH = 3


def _open_on_behalf_method(self, allow=None, errno=None) -> "NotifAction":
    """Open the file of this open/creat/openat/openat2 call the way the
    child asked for it, and answer with the opened file.

    Race-free replacement for "check the path, then continue": the
    supervisor reads the arguments once and opens the file itself, in a
    thread confined by the sandbox's own Landlock ruleset and without
    capabilities, relative to the child's cwd or dirfd, with its flags,
    mode and umask (and openat2's resolve flags).  ``allow(path, st)``,
    if given, then decides on the file *actually opened*: ``path`` is its
    real path (symlinks resolved), ``st`` its ``os.stat_result``.  It
    returns True (inject the fd into the child), False (fail the call
    with ``errno``, default EACCES) or a NotifAction to answer with
    instead.  It runs before O_TRUNC and O_CREAT take effect: a refused
    file is not truncated, and one the open had to create is removed
    again.  Without ``allow`` the file is injected.  A failed open
    answers with the errno the child would have seen; an exception in
    ``allow`` refuses the file and is re-raised (the handler's exception
    policy applies).

    Raises ValueError on a syscall that is not an open."""
    return _ctx_open_on_behalf(self, allow, errno)


HandlerCtx.open_on_behalf = _open_on_behalf_method


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
# Each C handler's user data is an integer key into _registry (never
# dereferenced by C, so it needs no memory and no ud_free); the entry holds
# strong references to the Handler and its run, and the run drops it when
# sandlock_run_with_handlers returns.  Keys are never reused, so a call
# that arrives after its entry is gone finds nothing and fails cleanly.
#
# Hot path: this runs once per trapped syscall, so it reads the 80-byte
# notification with one struct unpack, builds the ctx without the frozen
# dataclass __init__, and packs the action in one step (see _apply).
# =====================================================================

class _RunState:
    """Per-run state shared by its handlers: event loops of deferred workers.

    Loops are keyed by OS thread id, not threading.local: unless its
    thread state is pinned (see _pin_thread_state; not on every Python),
    ctypes gives a C-created thread a fresh Python thread state on every
    callback, so thread-locals would not survive between calls.

    close() must only be called once the run is over: it also deletes the
    thread states pinned by the run's threads, unless the run abandoned
    some of them (a handler that did not return, see docs/security.md): those
    threads may still run Python code, so then the states are kept."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loops = {}  # type: Dict[int, asyncio.AbstractEventLoop]
        self.pinned = []  # PyThreadState* of the run's threads: see _pin_thread_state

    def _loop(self):
        tid = threading.get_ident()
        loop = self._loops.get(tid)  # a dict lookup is atomic: no lock on the hot path
        if loop is None:
            with self._lock:
                loop = self._loops.get(tid)
                if loop is None:
                    loop = self._loops[tid] = asyncio.new_event_loop()
        return loop

    def run_coroutine(self, coro):
        """Drive coro to completion on this worker thread.

        Most handlers never really suspend (they await nothing, or only
        things that are already done), so the first step runs directly
        with ``coro.send(None)``: no task, no trip through the event loop
        (which costs tens of microseconds per call).  The thread's loop is
        made the running loop for that step, so whatever the coroutine
        creates (futures, sleeps, tasks) belongs to it; only if it does
        suspend does the loop take over and finish it."""
        loop = self._loop()
        _set_running_loop(loop)
        try:
            yielded = coro.send(None)
        except StopIteration as done:
            return done.value
        except BaseException:
            coro.close()
            raise
        finally:
            _set_running_loop(None)
        return loop.run_until_complete(_Resumed(coro, yielded).run())

    def close(self, abandoned=False):
        with self._lock:
            loops, self._loops = list(self._loops.values()), {}
        for loop in loops:
            try:
                loop.close()
            except Exception:  # a loop still running on a wedged worker
                pass
        # Only once the run is over and its threads have been joined.
        pinned, self.pinned = self.pinned, []
        if not abandoned:
            _release_pinned(pinned)


_set_running_loop = asyncio.events._set_running_loop
_CoroutineType = types.CoroutineType


class _Resumed:
    """A coroutine whose first step already ran and yielded ``yielded``
    (a future of the thread's loop, or None for a bare yield): await it
    inside a task to hand the rest of its steps, throws (cancellation)
    included, to that task."""

    __slots__ = ("coro", "yielded")

    def __init__(self, coro, yielded):
        self.coro = coro
        self.yielded = yielded

    def __await__(self):
        coro, out = self.coro, self.yielded
        while True:
            try:
                value = yield out
            except BaseException as exc:  # thrown in by the task: pass it on
                try:
                    out = coro.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                out = coro.send(value)
            except StopIteration as done:
                return done.value

    async def run(self):
        return await self


class _Entry:
    __slots__ = ("handler", "run", "policy", "warned")

    def __init__(self, handler, run, policy):
        self.handler = handler
        self.run = run
        self.policy = policy
        self.warned = False  # a bad return value was logged at WARNING


_registry = {}  # type: Dict[int, _Entry]
_registry_lock = threading.Lock()
_keys = itertools.count(1)


def _register(handler, run, policy=ExceptionPolicy.KILL) -> int:
    with _registry_lock:
        key = next(_keys)
        _registry[key] = _Entry(handler, run, policy)
    return key


def _unregister(key) -> bool:
    with _registry_lock:
        return _registry.pop(key, None) is not None


# ---- pinning a Python thread state on each supervisor / worker thread ----
#
# On every callback from a thread Python did not create, ctypes calls
# PyGILState_Ensure, which makes a brand-new PyThreadState (allocating and
# later unmapping its frame stack: an mmap + munmap per call), and
# PyGILState_Release, which destroys it.  That is most of the cost of a
# Python handler (~10 us of ~18 us).  So the first callback on such a thread
# takes one extra PyGILState_Ensure reference: ctypes' Release then leaves
# the state alive, and later callbacks on that thread reuse it.
#
# Releasing it: sandlock joins its supervisor and deferred worker threads
# before sandlock_run_with_handlers returns, so when the run is over those
# threads are gone and their pinned states are orphans.  _RunState.close()
# (the caller's thread, GIL held) then clears and deletes each of them.
# Nothing runs at thread exit: a pthread TLS destructor cannot do it (glibc
# has already cleared CPython's own TLS slot by then), and entering Python
# at thread exit could meet a finalizing interpreter.  If the run's caller
# never gets back into Python (interpreter exit during a run), the states
# are freed by the interpreter's own teardown.
#
# Deleting another thread's state with PyThreadState_Delete is clean up to
# CPython 3.11; from 3.12 on it also clears the *calling* thread's gilstate
# slot, so pinning is only enabled before 3.12 (later versions keep the
# per-call thread state: correct, just slower).

import sys as _sys

_GILSTATE_LOCKED = 0  # PyGILState_STATE


class _Pin:
    __slots__ = ("enabled", "tls", "ensure", "release", "this_tstate", "clear", "delete")

    def __init__(self):
        self.enabled = False
        self.tls = threading.local()


_pin = _Pin()


def _pin_setup():
    if os.environ.get("SANDLOCK_PY_NO_PIN") or _sys.version_info >= (3, 12):
        return
    if getattr(_sys, "implementation", None) is None or _sys.implementation.name != "cpython":
        return
    try:
        api = ctypes.pythonapi
        ensure, release = api.PyGILState_Ensure, api.PyGILState_Release
        this_tstate = api.PyGILState_GetThisThreadState
        clear, delete = api.PyThreadState_Clear, api.PyThreadState_Delete
    except AttributeError:
        return  # no pinning: every callback pays for a fresh thread state
    ensure.restype, ensure.argtypes = ctypes.c_int, []
    release.restype, release.argtypes = None, [ctypes.c_int]
    this_tstate.restype, this_tstate.argtypes = ctypes.c_void_p, []
    clear.restype, clear.argtypes = None, [ctypes.c_void_p]
    delete.restype, delete.argtypes = None, [ctypes.c_void_p]
    _pin.ensure, _pin.release, _pin.this_tstate = ensure, release, this_tstate
    _pin.clear, _pin.delete = clear, delete
    _pin.enabled = True


def _pin_thread_state(run):
    """First callback (GIL held) on a thread state: pin it if it is the
    throwaway one ctypes made for a thread Python did not create."""
    _pin.tls.pinned = True  # once per thread state, whatever happens below
    if not _pin.enabled or run is None:
        return
    # Called from _trampoline: if that is the bottom frame, no Python code
    # was running on this thread, i.e. ctypes just created its state.  (A
    # Python thread's state must never be pinned: it is deleted later.)
    if _sys._getframe(1).f_back is not None:
        return
    ts = _pin.this_tstate()
    if not ts:
        return
    _pin.ensure()  # GIL already held: only counts one more reference
    run.pinned.append(ts)


def _release_pinned(pinned):
    """Delete the pinned states of a finished run's threads (GIL held).

    Only valid once those threads are joined (they run no more code and
    will never touch their state again): _RunState.close() guarantees it."""
    for ts in pinned:
        _pin.clear(ts)
        _pin.delete(ts)


_pin_setup()


# ---- the callback ----
_NOTIF = struct.Struct("=QIIiIQ6Q")  # struct sandlock_notif (sandlock.h)
_NotifBytes = ctypes.c_char * 80
assert _NOTIF.size == ctypes.sizeof(_native.Notif) == 80
_unpack_notif = _NOTIF.unpack_from
_CTX_FIELDS = tuple(f.name for f in dataclasses.fields(HandlerCtx))
assert _CTX_FIELDS == ("id", "pid", "flags", "syscall_nr", "arch",
                       "instruction_pointer", "args", "_mem")


def _new_ctx(n, ref):
    """HandlerCtx(*n[:6], n[6:], ref) without the frozen dataclass __init__
    (eight object.__setattr__ calls): same fields, same frozen instance."""
    ctx = _object_new(HandlerCtx)
    _object_setattr(ctx, "__dict__", {
        "id": n[0], "pid": n[1], "flags": n[2], "syscall_nr": n[3], "arch": n[4],
        "instruction_pointer": n[5], "args": n[6:], "_mem": ref,
    })
    return ctx


def _bad_return(entry, action):
    """Log a handle() that returned something other than a NotifAction:
    at WARNING the first time per handler and run (a handler that does it
    on every call must not flood the log), at DEBUG afterwards."""
    try:
        level = logging.DEBUG if entry.warned else logging.WARNING
        entry.warned = True
        _log.log(level, "%s.handle() returned %s, not a NotifAction: treated as a "
                 "handler error (on_exception=%s)", type(entry.handler).__name__,
                 _short_repr(action), entry.policy.name)
    except BaseException:
        pass


def _short_repr(v, limit=80):
    try:
        r = repr(v)
    except BaseException:
        r = "<%s>" % type(v).__name__
    return r if len(r) <= limit else r[:limit] + "..."


def _trampoline(ud, notif, mem, out):
    # ud, notif, mem, out are plain addresses (RAW_HANDLER_FN).  Never let
    # an exception escape: ctypes would print it and return 0 with the
    # action UNSET.  Any failure -> non-zero -> the exception policy.
    ref = None
    action = None
    try:
        entry = _registry.get(ud)
        if entry is None:
            return 1
        try:
            _pin.tls.pinned
        except AttributeError:
            _pin_thread_state(entry.run)
        ref = _MemRef(mem)
        ctx = _new_ctx(_unpack_notif(_NotifBytes.from_address(notif)), ref)
        action = entry.handler.handle(ctx)
        if type(action) is not NotifAction:  # fast path: a plain action
            if type(action) is _CoroutineType or inspect.isawaitable(action):
                action = entry.run.run_coroutine(action)
            if not isinstance(action, NotifAction):
                _bad_return(entry, action)
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
        if action is not None and isinstance(action, NotifAction) and action._owns_fd():
            try:
                os.close(action.srcfd)
            except OSError:
                pass


_TRAMPOLINE = _native.RAW_HANDLER_FN(_trampoline)
_NO_UD_FREE = _native.UD_FREE_FN()  # a NULL function pointer
_GUARD = _native.guard_address()


def _is_async(handler) -> bool:
    fn = getattr(handler, "handle", None)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(handler), "handle", None)
    )


def _validate_handler(handler):
    if not isinstance(handler, Handler):
        raise PolicyTypeError("handler must be a sandlock.Handler, not %s"
                              % type(handler).__name__)
    if getattr(type(handler), "handle", None) is Handler.handle and "handle" not in getattr(
        handler, "__dict__", {}
    ):
        raise PolicyTypeError("%s does not override handle(ctx)" % type(handler).__name__)
    try:
        return ExceptionPolicy(handler.on_exception)
    except (ValueError, TypeError):
        raise PolicyValueError(
            "%s.on_exception must be an ExceptionPolicy, got %r"
            % (type(handler).__name__, handler.on_exception)
        ) from None


def _make_c_handler(handler, policy, run):
    """Create the C handler for one Handler instance.  Returns (ptr, key).
    The caller owns ptr until it passes it to sandlock_run_with_handlers
    (or frees it with sandlock_handler_free), and must _unregister(key)
    once the run is over."""
    key = _register(handler, run, policy)
    # ud is the key itself; no ud_free: there is nothing to free.
    h = _lib.sandlock_handler_new(_TRAMPOLINE, key, _NO_UD_FREE, int(policy))
    if not h:
        _unregister(key)
        raise MemoryError("sandlock_handler_new failed")
    _lib.sandlock_handler_set_guard(h, _GUARD)
    if _is_async(handler):
        _lib.sandlock_handler_set_deferred(h, True)
    return h, key
