"""HandlerCtx: one trapped syscall as a handler sees it (the notification's
fields, the caller's memory while the call waits, its path argument), and
opening a file on the caller's behalf."""

import ctypes
import dataclasses
import os
import threading
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, TypeVar, Union

from . import _native
from ._action import NotifAction, _U64_MAX, _check_int

__all__ = ["HandlerCtx", "PATH_ARG_SYSCALLS", "MULTI_PATH_SYSCALLS"]

_lib = _native.lib
_MAX_READ = 64 << 20  # one read() buffers this much at most
_T = TypeVar("_T")
# open_on_behalf's allow(path, st): True, False or a NotifAction.
Allow = Callable[[str, os.stat_result], Union[bool, NotifAction]]


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


def _resolve_table() -> Tuple[Dict[int, int], FrozenSet[int]]:
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

    def __init__(self, ptr: _native.Ptr) -> None:
        self.ptr = ptr
        # Re-entrant: open_on_behalf's allow callback runs inside a C call
        # made under the lock and may use the ctx's accessors.
        self.lock = threading.RLock()

    def kill(self) -> None:
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
    _mem: Optional[_MemRef] = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def syscall_name(self) -> Optional[str]:
        return _native.syscall_name(self.syscall_nr)

    def _call(self, fn: Callable[..., _T], *a: Any) -> Optional[_T]:
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

        def rd(p: int) -> Optional[bytes]:
            if _lib.sandlock_mem_peek(p, addr, buf, length) != 0:
                return None
            return buf.raw[:length]

        return self._call(rd)

    def write(self, addr: int, data: Union[bytes, bytearray, memoryview]) -> bool:
        """Write ``data`` (bytes-like) into the child at ``addr``."""
        addr = _check_addr(addr)
        if isinstance(data, str):
            raise TypeError("write needs bytes, not str")
        raw = bytes(data)
        r = self._call(lambda p: int(_lib.sandlock_mem_poke(p, addr, raw, len(raw))))
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

    def open_on_behalf(self, allow: Optional[Allow] = None,
                       errno: Optional[int] = None) -> NotifAction:
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



# ---- opening on the caller's behalf (sandlock_open_on_behalf) ----
_NO_CHECK = ctypes.cast(0, _native.OPEN_CHECK_FN)  # NULL: no check
_OPEN_FAMILY = frozenset(
    n for n in map(_native.syscall_nr, ("open", "creat", "openat", "openat2")) if n >= 0
)


def _ctx_open_on_behalf(ctx: HandlerCtx, allow: Optional[Allow],
                        errno: Optional[int]) -> NotifAction:
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
    o = _native.Opened()
    # allow runs inside the C call (the check), before O_TRUNC/O_CREAT take
    # effect; what it said is carried out here, after the call returns.
    # [NotifAction to answer with] or [exception to re-raise]
    outcome: List[Union[NotifAction, BaseException]] = []

    decide: Allow = allow or (lambda path, st: True)  # check is made only with allow

    def check(_ud: Any, file: Any) -> int:
        try:
            f = file.contents
            verdict = decide(os.fsdecode(ctypes.string_at(f.path)), os.fstat(f.fd))
        except BaseException as e:  # never into C: refuse, re-raise below
            outcome.append(e)
            return _ERRNO_EACCES
        if isinstance(verdict, NotifAction):
            outcome.append(verdict)
            return _ERRNO_EACCES
        return 0 if verdict else deny

    cb = _NO_CHECK if allow is None else _native.OPEN_CHECK_FN(check)
    e = ctx._call(lambda p: int(_lib.sandlock_open_on_behalf(p, ctypes.byref(n), cb, None,
                                                               ctypes.byref(o))))
    first = outcome[0] if outcome else None
    if isinstance(first, BaseException):
        if e == 0:
            os.close(o.fd)
            _native.take_string(o.path)
        raise first
    if first is not None:  # allow answered with its own action
        if e == 0:  # cannot happen: the check refused
            os.close(o.fd)
            _native.take_string(o.path)
        return first
    if e is None:  # stale ctx: nobody waits for this answer any more
        return NotifAction.errno(_ERRNO_ESRCH)
    if e != 0:
        return NotifAction.errno(e)
    _native.take_string(o.path)
    return NotifAction.inject_fd_send(o.fd, o.newfd_flags)


_ERRNO_EACCES = 13
_ERRNO_ESRCH = 3


def _check_addr(addr: object) -> int:
    addr = _check_int("addr", addr)
    if not 0 <= addr <= _U64_MAX:
        raise ValueError("addr out of range")
    return addr


def _check_len(name: str, n: object, allow_zero: bool = False) -> int:
    n = _check_int(name, n)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError("%s must be %s, got %d" % (name, ">= 0" if allow_zero else "> 0", n))
    return n
