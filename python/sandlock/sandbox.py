"""sandlock.sandbox: the Sandbox class and its helpers, under the module
name the reference SDK uses (``from sandlock.sandbox import Sandbox``).

The code lives in the package itself; this module only gives it the
reference's public path.
"""

from . import (  # noqa: F401  (re-exported)
    BranchAction,
    Change,
    DryRunResult,
    ExitReason,
    Fd,
    Process,
    Protection,
    Result,
    Sandbox,
    StdioMode,
    Usage,
    parse_memory_size,
    parse_ports,
)

__all__ = ["BranchAction", "Change", "DryRunResult", "ExitReason", "Fd", "Process", "Protection",
           "Result", "Sandbox", "StdioMode", "Usage", "parse_memory_size", "parse_ports"]
