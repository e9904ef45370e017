"""NotifAction: the decision a handler returns for one trapped syscall, and
how it is written into the C ``sandlock_action_t`` (sandlock.h); and
ExceptionPolicy, what a handler's failure turns into."""

import ctypes
import dataclasses
import enum
import fcntl
import os
import signal as _signal
import struct
from typing import Dict, Union

from . import _native

__all__ = ["ActionKind", "ExceptionPolicy", "NotifAction"]


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


def _check_int(name: str, value: object) -> int:
    # bool is an int subclass, but errno(True) is certainly a mistake.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    return int(value)


def _check_newfd_flags(flags: object) -> int:
    flags = _check_int("newfd_flags", flags)
    if flags not in (0, os.O_CLOEXEC):
        raise ValueError("newfd_flags must be 0 or os.O_CLOEXEC, got %#x" % flags)
    return flags


def _check_srcfd(fd: object) -> int:
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
    def inject_bytes(cls, data: Union[bytes, bytearray, memoryview], *, seal: bool = True, cloexec: bool = True) -> "NotifAction":
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


def _new_action(kind: int, field: str, value: int) -> "NotifAction":
    """NotifAction(kind, field=value) without the frozen dataclass __init__
    (one object.__setattr__ per field): the instance is identical, it is
    just filled in one step."""
    a = _object_new(NotifAction)
    d: Dict[str, object] = {"kind": kind}  # same key order as __init__ would give
    d.update(_ACTION_DEFAULTS)
    d[field] = value
    _object_setattr(a, "__dict__", d)
    return a


_CONTINUE = NotifAction(ActionKind.CONTINUE)
_HOLD = NotifAction(ActionKind.HOLD)
