"""What a run gives back: ``Result`` (``DryRunResult`` for a dry run),
``ExitReason``, and reading them out of the library's native result; the
errors a failed start raises."""

import ctypes
import dataclasses
import enum
import os
from typing import Callable, List, NoReturn, Optional, Tuple

from . import _cow
from . import _native
from ._cow import Change
from ._native import Ptr
from .exceptions import ERR_NOT_FOUND, error_for

_lib = _native.lib


def _error_text(msg: ctypes.c_void_p, what: str) -> str:
    """The library's message at msg (freed here), or "WHAT failed"."""
    raw = _native.take_string(msg.value)
    return raw.decode(errors="replace") if raw else what + " failed"


def raise_from(err: ctypes.c_int, msg: ctypes.c_void_p, what: str,
               building: bool = False) -> NoReturn:
    raise error_for(err.value or 7, _error_text(msg, what), building)


class ExitReason(enum.IntEnum):
    """How the command ended; the values are the C ABI's
    (``sandlock_result_reason``).  ``str()`` gives the lower-case name."""

    EXITED = 0    # exited on its own; exit_code is its status
    SIGNALED = 1  # died of a signal other than SIGKILL
    KILLED = 2    # died of SIGKILL (from any source), or a handler ended it
    TIMEOUT = 3   # sandlock killed it when the timeout expired

    def __str__(self) -> str:
        return self.name.lower()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of one run (immutable).

    ``killed_by_handler`` tells a handler's kill (a KILL action, or a handler
    failure under ``on_exception=KILL``) from any other death; such a run's
    reason is KILLED whatever the signal.  ``error`` explains a run whose
    command could not even be started (e.g. not found on PATH), else None.
    ``denied_access`` (with ``Sandbox(audit_denials=True)``): a failed
    run's first access Landlock refused, ``(what, path)``, else None.
    ``stdout_truncated`` / ``stderr_truncated`` count the bytes discarded
    past the sandbox's ``max_output`` cap (0: the stream is complete)."""

    success: bool
    exit_code: int  # status if exited; 128+signal if signaled/killed; 124 on timeout
    reason: ExitReason
    signal: int     # the signal that ended the command, -1 if none did
    stdout: bytes
    stderr: bytes
    killed_by_handler: bool = False
    error: Optional[str] = None
    # audit_denials: the first access Landlock refused, (what, path).
    denied_access: Optional[Tuple[str, str]] = None
    # Bytes discarded past the max_output cap (0: the stream is complete).
    stdout_truncated: int = 0
    stderr_truncated: int = 0


@dataclasses.dataclass(frozen=True)
class DryRunResult(Result):
    """Outcome of ``Sandbox.dry_run``: the run's Result fields, plus
    ``changes``, what the run would have done to the workdir (a list of
    ``Change``, sorted by path); nothing of it was applied."""

    changes: List[Change] = dataclasses.field(default_factory=list)


def _bytes_at(p: Ptr, n: int) -> bytes:
    """n bytes at address p.  ctypes.string_at takes a C int size, so it
    fails beyond 2 GiB; a sized array view has no such limit."""
    if not p or not n:
        return b""
    if n < 1 << 31:
        return ctypes.string_at(p, n)
    raw: bytes = (ctypes.c_char * n).from_address(p).raw
    return raw


def read_fields(r: Ptr, dry_run: bool = False) -> Tuple[Result, _cow.BranchReport]:
    """(Result or DryRunResult, the workdir's branch report) of native
    result r (borrowed: not freed here)."""
    def grab(fn: Callable[..., Ptr]) -> bytes:
        n = ctypes.c_size_t(0)
        p = fn(r, ctypes.byref(n))
        return _bytes_at(p, n.value)

    reason = ExitReason(int(_lib.sandlock_result_reason(r)))  # the reference's meaning
    branch = _cow.report(r)
    error = _lib.sandlock_result_error(r)  # the command never ran: why
    path = ctypes.c_char_p()
    what = _lib.sandlock_result_denied_access(r, ctypes.byref(path))
    denied = (what.decode(errors="replace"), os.fsdecode(path.value or b"")) if what else None
    more = {"changes": branch.changes} if dry_run else {}
    return (DryRunResult if dry_run else Result)(
        success=bool(_lib.sandlock_result_success(r)),
        exit_code=int(_lib.sandlock_result_exit_code(r)),
        reason=reason,
        # As the reference: a signal number for SIGNALED only (a SIGKILL,
        # a handler's kill or a timeout has none).
        signal=int(_lib.sandlock_result_signal(r)),
        stdout=grab(_lib.sandlock_result_stdout_bytes),
        stderr=grab(_lib.sandlock_result_stderr_bytes),
        killed_by_handler=bool(_lib.sandlock_result_killed_by_handler(r)),
        stdout_truncated=int(_lib.sandlock_result_stdout_truncated(r)),
        stderr_truncated=int(_lib.sandlock_result_stderr_truncated(r)),
        error=error.decode(errors="replace") if error else None,
        denied_access=denied,
        **more
    ), branch


def read_result(r: Ptr) -> Result:
    """A Result from native result r (borrowed: not freed here)."""
    return read_fields(r)[0]


def take_result(r: Ptr, dry_run: bool = False) -> Result:
    """The Result of native result r (freed here).  A workdir commit that
    failed or hit conflicts raises BranchError / BranchConflictError
    (with ``.result``); a dry run returns a DryRunResult instead."""
    res, branch = take_fields(r, dry_run)
    if not dry_run:
        branch.raise_if_failed(res)
    return res


def take_fields(r: Ptr, dry_run: bool) -> Tuple[Result, _cow.BranchReport]:
    """read_fields of native result r, which is freed."""
    try:
        return read_fields(r, dry_run)
    finally:
        _lib.sandlock_result_free(r)


def not_found_result(text: str) -> Result:
    """What a run whose command is not on PATH returns: the same as a
    missing absolute path (exit status 127, the reason on stderr)."""
    return Result(success=False, exit_code=127, reason=ExitReason.EXITED, signal=-1,
                  stdout=b"", stderr=("sandlock: %s\n" % text).encode(errors="replace"),
                  error=text)


def run_failure(err: ctypes.c_int, msg: ctypes.c_void_p, what: str) -> Result:
    """Result for a bare command that is not found; raise for anything else."""
    text = _error_text(msg, what)
    if err.value == ERR_NOT_FOUND and text.startswith("command not found"):
        return not_found_result(text)
    raise error_for(err.value or 7, text, False)
