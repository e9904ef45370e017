"""The copy-on-write workdir from Python: the ``workdir``, ``fs_storage``,
``on_exit``, ``on_error`` and ``max_disk`` fields of Sandbox (validators
and the C number of a branch action), ``BranchAction``, and what a run reports about its
branch: the change list (``Change``, ``DryRunResult`` of
``Sandbox.dry_run``) and commit failures (``BranchConflictError``).
The layer itself is the C library's (src/cow/, behind the builtin in src/builtins/cow/)."""

import ctypes
import dataclasses
import enum
import os
from typing import Any, List, Optional

from . import _native
from .exceptions import BranchConflictError, BranchError, PolicyTypeError, PolicyValueError

_lib = _native.lib


class BranchAction(enum.Enum):
    """What happens to the workdir's staged writes when a run ends."""

    COMMIT = "commit"  # apply them to the real workdir
    ABORT = "abort"    # throw them away: the real workdir stays as it was
    KEEP = "keep"      # leave the upper layer in fs_storage for the caller


_C_ACTION = {BranchAction.COMMIT: 0, BranchAction.ABORT: 1, BranchAction.KEEP: 2}


@dataclasses.dataclass(frozen=True)
class Change:
    """One entry of a run's change list."""

    kind: str  # "A" added, "M" modified, "D" deleted
    path: str  # relative to workdir


def action(name: str, value: Any) -> BranchAction:
    """A BranchAction, or its value as a str ("commit", "abort", "keep")."""
    if isinstance(value, BranchAction):
        return value
    if isinstance(value, str):
        try:
            return BranchAction(value.lower())
        except ValueError:
            raise PolicyValueError("%s: unknown branch action %r (use 'commit', 'abort' or "
                                   "'keep')" % (name, value)) from None
    raise PolicyTypeError("%s must be a BranchAction, not %s" % (name, type(value).__name__))


def max_disk(name: str, value: Any) -> Optional[int]:
    """None (no quota), bytes, or a size string ("100M")."""
    if value is None:
        return None
    from ._checks import parse_memory_size  # the same size syntax as max_memory

    try:
        return parse_memory_size(value)
    except (PolicyValueError, PolicyTypeError) as e:
        raise type(e)("%s: %s" % (name, e.message)) from None


def c_action(a: BranchAction) -> int:
    """The C ABI's number of a branch action (sandlock_sandbox_builder_on_exit)."""
    return _C_ACTION[a]


def _changes(r: _native.Ptr, conflicts: bool) -> List[Change]:
    out: List[Change] = []
    kind = ctypes.c_char()
    for i in range(int(_lib.sandlock_result_change_count(r, conflicts))):
        path = _lib.sandlock_result_change(r, conflicts, i, ctypes.byref(kind))
        out.append(Change(kind.value.decode(), os.fsdecode(path)))
    return out


@dataclasses.dataclass
class BranchReport:
    """What a native result says about its branch (read before it is freed)."""

    changes: List[Change]
    conflicts: List[Change]
    kept: Optional[str]
    error: Optional[str]

    def raise_if_failed(self, result: object) -> None:
        """A commit that failed, or left changes out, is an error: the
        staged work is kept (``kept``) and nothing is lost silently."""
        where = " (staged changes kept in %s)" % self.kept if self.kept else ""
        if self.error:
            e = BranchError("workdir: %s%s" % (self.error, where))
        elif self.conflicts:
            e = BranchConflictError(
                "workdir: the real files changed during the run, not committed: %s%s"
                % (", ".join(c.path for c in self.conflicts), where))
        else:
            return
        e.result, e.conflicts, e.kept = result, self.conflicts, self.kept
        raise e


def report(r: _native.Ptr) -> BranchReport:
    kept = _lib.sandlock_result_cow_kept(r)
    err = _lib.sandlock_result_cow_error(r)
    return BranchReport(changes=_changes(r, False), conflicts=_changes(r, True),
                        kept=os.fsdecode(kept) if kept else None,
                        error=err.decode(errors="replace") if err else None)
