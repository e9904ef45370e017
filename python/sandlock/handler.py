"""User handlers for trapped syscalls: Handler, HandlerCtx, NotifAction.

A handler decides a syscall the sandboxed child made.  It is registered with
``Sandbox.run_with_handlers(cmd, [(syscall, handler), ...])`` (a syscall
name or number); the C
supervisor calls it (through one module-wide ctypes trampoline) from its own
threads, so ``handle`` must be thread-safe and should be fast.  Define
``handle`` as ``async def`` to run it on a deferred worker thread instead.

The parts live apart: Handler in _handlerbase.py, NotifAction in
_action.py, HandlerCtx in _ctx.py, the C callback that calls handlers in
_callback.py (with _pin.py, its thread-state cache); this module only
re-exports the public names.
"""

from ._action import ActionKind, ExceptionPolicy, NotifAction
from ._ctx import MULTI_PATH_SYSCALLS, PATH_ARG_SYSCALLS, HandlerCtx
from ._handlerbase import Handler

__all__ = [
    "ActionKind",
    "ExceptionPolicy",
    "Handler",
    "HandlerCtx",
    "NotifAction",
    "PATH_ARG_SYSCALLS",
    "MULTI_PATH_SYSCALLS",
]
