"""User handlers for trapped syscalls: Handler, HandlerCtx, NotifAction.

A handler decides a syscall the sandboxed child made.  It is registered with
``Sandbox.run_with_handlers(cmd, [(syscall, handler), ...])`` (a syscall
name or number); the C
supervisor calls it (through one module-wide ctypes trampoline) from its own
threads, so ``handle`` must be thread-safe and should be fast.  Define
``handle`` as ``async def`` to run it on a deferred worker thread instead.

The parts live apart: NotifAction in _action.py, HandlerCtx in _ctx.py, the
C callback that calls handlers in _callback.py (with _pin.py, its
thread-state cache); this module is the public face.
"""

from ._action import ActionKind, ExceptionPolicy, NotifAction
from ._ctx import MULTI_PATH_SYSCALLS, PATH_ARG_SYSCALLS, HandlerCtx
# Internals the tests inspect through this module (the registry of live
# handlers, the trampoline itself, the thread-state cache).
from ._callback import _RunState, _register, _registry, _trampoline, _unregister  # noqa: F401
from ._pin import _pin  # noqa: F401
from .exceptions import PolicyTypeError, PolicyValueError

__all__ = [
    "ActionKind",
    "ExceptionPolicy",
    "Handler",
    "HandlerCtx",
    "NotifAction",
    "PATH_ARG_SYSCALLS",
    "MULTI_PATH_SYSCALLS",
]


class Handler:
    """Base class: subclass and override ``handle(ctx) -> NotifAction``.

    ``handle`` may be ``async def``: it then runs on a deferred worker thread
    (the supervisor loop stays free) in a per-thread event loop, and the ctx
    stays valid across awaits.  ``on_exception`` chooses what a failure of
    the handler turns into (default: kill the sandbox)."""

    on_exception = ExceptionPolicy.KILL

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        raise NotImplementedError("Handler subclasses must override handle(ctx)")


def _validate_handler(handler: object) -> ExceptionPolicy:
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
