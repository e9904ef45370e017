"""The base class of user handlers (Handler) and the check that a
registered handler is one (_validate_handler, used when a run registers
its handlers); sandlock.handler re-exports Handler."""

from ._action import ExceptionPolicy, NotifAction
from ._ctx import HandlerCtx
from .exceptions import PolicyTypeError, PolicyValueError


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
