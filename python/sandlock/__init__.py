"""sandlock: run a command confined by Landlock + seccomp, from Python.

    import sandlock
    sb = sandlock.Sandbox(fs_readable=["/usr", "/lib", "/lib64", "/etc", "/bin"])
    r = sb.run(["/bin/cat", "/etc/hostname"])
    print(r.success, r.stdout)

Errors (see ``sandlock.exceptions``): an invalid configuration or handler
registration raises PolicyError (PolicyValueError / PolicyTypeError, which
are also ValueError / TypeError) at once; a failure to start the sandbox
raises a SandboxError subclass.  Every sandlock error is a SandlockError (a
plain Exception subclass, NOT OSError: its ``code`` is a SANDLOCK_ERR_*
number, not an errno).  A command that cannot be found or executed is not
an error: ``run`` returns a failed Result (exit code 127 / 126).  Preset
handlers live in ``sandlock.presets`` and are deliberately not re-exported
here.
"""

# Re-exports only: each name lives in the module named.
from ._native import VERSION as __version__
from ._checks import parse_memory_size, parse_ports, parse_size, parse_time_start
from ._cow import BranchAction, Change
from ._fork import ForkResult
from ._inputs import inputs
from ._knobs import Protection, ProtectionStatus, min_landlock_abi
from ._pipeline import Gather, GatherPipeline, NamedStage, Pipeline, Stage
from ._policy import PolicyContext, SyscallEvent
from ._process import Fd, Process, StdioMode, Usage
from ._result import DryRunResult, ExitReason, Result
from .exceptions import (
    BranchConflictError,
    BranchError,
    ChildError,
    ConfinementError,
    ForkError,
    LandlockUnavailableError,
    MemoryProtectError,
    NotifError,
    PolicyError,
    PolicyTypeError,
    PolicyValueError,
    SandboxError,
    SandlockError,
    SeccompError,
)
from .handler import ExceptionPolicy, Handler, HandlerCtx, NotifAction
from .profile import list_profiles, load_profile
from .sandbox import Sandbox, check, confine, landlock_abi_version

__all__ = [
    "BranchAction",
    "Change",
    "DryRunResult",
    "BranchConflictError",
    "BranchError",
    "ChildError",
    "ConfinementError",
    "ExceptionPolicy",
    "ExitReason",
    "ForkError",
    "ForkResult",
    "Gather",
    "GatherPipeline",
    "Handler",
    "HandlerCtx",
    "LandlockUnavailableError",
    "MemoryProtectError",
    "NotifAction",
    "NamedStage",
    "NotifError",
    "Pipeline",
    "PolicyContext",
    "PolicyError",
    "Protection",
    "ProtectionStatus",
    "Process",
    "Result",
    "Sandbox",
    "SandboxError",
    "SandlockError",
    "SeccompError",
    "confine",
    "Stage",
    "StdioMode",
    "Fd",
    "Usage",
    "SyscallEvent",
    "inputs",
    "landlock_abi_version",
    "min_landlock_abi",
    "parse_ports",
    "parse_memory_size",
    "list_profiles",
    "load_profile",
]
