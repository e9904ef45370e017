"""The sandlock exception hierarchy (the reference SDK's names)::

    SandlockError
      +-- PolicyError               invalid configuration or registration
      |     (PolicyValueError is also a ValueError, PolicyTypeError a TypeError)
      +-- SandboxError              the sandbox could not be started or run
      |     +-- ForkError               creating the sandboxed process failed
      |     +-- ConfinementError        Landlock / seccomp / privilege setup failed
      |     |     +-- LandlockUnavailableError  the kernel has no Landlock
      |     |     +-- SeccompError              installing the seccomp filter failed
      |     |           +-- NotifError              the notification supervisor failed
      |     +-- ChildError              the child died while being set up
      |     +-- BranchError             COW branch operation failed (not raised yet:
      |           +-- BranchConflictError   sandlock has no COW layer)
      +-- MemoryProtectError        mprotect failed (not raised yet)

Every instance has ``code`` (a SANDLOCK_ERR_* number; not an errno, so none
of these is an OSError), ``code_name`` (e.g. "NOT_FOUND") and ``message``.
A command that is not found, or that the sandbox cannot execute, is not an
exception: ``run`` returns a failed Result (exit status 127 / 126).
"""

from typing import Any, List, Optional, Tuple, Type

from . import _native

__all__ = [
    "SandlockError",
    "PolicyError",
    "PolicyValueError",
    "PolicyTypeError",
    "SandboxError",
    "ForkError",
    "ConfinementError",
    "LandlockUnavailableError",
    "SeccompError",
    "NotifError",
    "ChildError",
    "BranchError",
    "BranchConflictError",
    "MemoryProtectError",
]

# SANDLOCK_ERR_* numbers (sandlock.h).
ERR_INVALID, ERR_NOT_FOUND, ERR_BAD_PORT, ERR_CONFLICT = 1, 2, 3, 4
ERR_UNSUPPORTED, ERR_SYSCALL, ERR_SYSTEM, ERR_NOMEM = 5, 6, 7, 8


class SandlockError(Exception):
    """Base of every sandlock error.

    Construct as ``SandlockError(message)`` or ``SandlockError(code, message)``
    (``code`` a SANDLOCK_ERR_* number; default: the class's own)."""

    default_code = ERR_SYSTEM

    def __init__(self, *args: Any) -> None:
        if len(args) == 2 and isinstance(args[0], int) and not isinstance(args[0], bool):
            code, message = args
        elif len(args) == 1:
            code, message = self.default_code, args[0]
        elif not args:
            code, message = self.default_code, ""
        else:
            raise TypeError("%s(message) or %s(code, message)"
                            % (type(self).__name__, type(self).__name__))
        self.code = int(code)
        self.code_name = _native.ERR_NAMES.get(self.code, "UNKNOWN")
        self.message = str(message)
        super().__init__("%s (%s): %s" % (self.code_name, self.code, self.message))

    def __reduce__(self) -> Tuple[Type["SandlockError"], Tuple[int, str]]:  # picklable despite the custom __init__
        return (type(self), (self.code, self.message))


class PolicyError(SandlockError, RuntimeError):
    """The configuration (or a handler registration) is invalid.  Also a
    RuntimeError, as the reference's configuration errors are: ``except
    RuntimeError`` catches it."""

    default_code = ERR_INVALID


class PolicyValueError(PolicyError, ValueError):
    """An invalid configuration value; also a ValueError."""


class PolicyTypeError(PolicyError, TypeError):
    """A configuration value of the wrong type; also a TypeError."""


class SandboxError(SandlockError):
    """Starting or running the sandbox failed."""


class ForkError(SandboxError):
    """Creating the sandboxed process failed."""


class ConfinementError(SandboxError):
    """Confining the sandboxed process (Landlock, seccomp, privileges) failed."""


class LandlockUnavailableError(ConfinementError):
    """The kernel has no Landlock: sandlock refuses to run unconfined."""

    default_code = ERR_UNSUPPORTED


class SeccompError(ConfinementError):
    """Building or installing the seccomp filter failed."""


class NotifError(SeccompError):
    """The seccomp user-notification supervisor could not be set up."""


class ChildError(SandboxError):
    """The sandboxed child died or stalled while being set up."""


class BranchError(SandboxError):
    """A COW branch operation failed (sandlock has no COW layer yet)."""

    # Set by the run that raises it (_cow.BranchReport.raise_if_failed).
    result: Any
    conflicts: List[Any]
    kept: Optional[str]


class BranchConflictError(BranchError):
    """A sibling branch committed first."""


class MemoryProtectError(SandlockError):
    """mprotect failed (not raised by this implementation yet)."""


# A run-time SANDLOCK_ERR_SYSTEM failure names the step that failed at the
# start of its message (src/launch/, src/supervisor/supervisor.c, src/launch/filter.c); the
# first matching fragment picks the class.
_SYSTEM_STEPS = (
    ("fork:", ForkError),
    ("creating pipes", ForkError),
    ("pidfd_open", ForkError),
    ("listener", NotifError),
    ("pidfd_getfd", NotifError),
    ("supervisor", NotifError),
    ("seccomp", SeccompError),
    ("bpf", SeccompError),
    ("landlock", ConfinementError),
    ("capability", ConfinementError),
    ("no_new_privs", ConfinementError),
    ("setrlimit", ConfinementError),
    ("child", ChildError),
)

_POLICY_CODES = (ERR_INVALID, ERR_NOT_FOUND, ERR_BAD_PORT, ERR_CONFLICT, ERR_SYSCALL)


def error_for(code: int, message: str, building: bool) -> SandlockError:
    """The exception for a failure the C library reported.

    ``building``: the failure came from sandlock_sandbox_build, where every
    error is about the configuration."""
    if building or code in _POLICY_CODES:
        return PolicyValueError(code, message)
    if code == ERR_UNSUPPORTED:
        return LandlockUnavailableError(code, message)
    low = message.lower()
    for fragment, cls in _SYSTEM_STEPS:
        if fragment in low:
            return cls(code, message)
    return SandboxError(code, message)
