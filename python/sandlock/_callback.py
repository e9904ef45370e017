"""The trampoline: the one C callback through which the supervisor calls
every Python handler of every run, the per-run state of those handlers
(the event loops of deferred workers), and the registry of live handlers."""

import asyncio
import ctypes
import dataclasses
import inspect
import itertools
import logging
import os
import struct
import threading
import types
from typing import Any, Coroutine, Dict, Generator, List, Optional, Tuple

from . import _native
from ._action import ExceptionPolicy, NotifAction, _object_new, _object_setattr
from ._ctx import HandlerCtx, _MemRef
from ._pin import _pin, _pin_thread_state, _release_pinned

_lib = _native.lib
_log = logging.getLogger("sandlock")

# =====================================================================
# The trampoline: one CFUNCTYPE for every handler of every run.
#
# Each C handler's user data is an integer key into _registry (never
# dereferenced by C, so it needs no memory and no ud_free); the entry holds
# strong references to the Handler and its run, and the run drops it when
# sandlock_run_with_handlers returns.  Keys are never reused, so a call
# that arrives after its entry is gone finds nothing and fails cleanly.
#
# Hot path: this runs once per trapped syscall, so it reads the 80-byte
# notification with one struct unpack, builds the ctx without the frozen
# dataclass __init__, and packs the action in one step (see _apply).
# =====================================================================

class _RunState:
    """Per-run state shared by its handlers: event loops of deferred workers.

    Loops are keyed by OS thread id, not threading.local: unless its
    thread state is pinned (see _pin_thread_state; not on every Python),
    ctypes gives a C-created thread a fresh Python thread state on every
    callback, so thread-locals would not survive between calls.

    close() must only be called once the run is over: it also deletes the
    thread states pinned by the run's threads, unless the run abandoned
    some of them (a handler that did not return, see docs/security.md): those
    threads may still run Python code, so then the states are kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loops: Dict[int, asyncio.AbstractEventLoop] = {}
        self.pinned: List[int] = []  # PyThreadState* of the run's threads: see _pin_thread_state

    def _loop(self) -> asyncio.AbstractEventLoop:
        tid = threading.get_ident()
        loop = self._loops.get(tid)  # a dict lookup is atomic: no lock on the hot path
        if loop is None:
            with self._lock:
                loop = self._loops.get(tid)
                if loop is None:
                    loop = self._loops[tid] = asyncio.new_event_loop()
        return loop

    def run_coroutine(self, coro: Any) -> Any:  # a coroutine or awaitable with send()
        """Drive coro to completion on this worker thread.

        Most handlers never really suspend (they await nothing, or only
        things that are already done), so the first step runs directly
        with ``coro.send(None)``: no task, no trip through the event loop
        (which costs tens of microseconds per call).  The thread's loop is
        made the running loop for that step, so whatever the coroutine
        creates (futures, sleeps, tasks) belongs to it; only if it does
        suspend does the loop take over and finish it."""
        loop = self._loop()
        _set_running_loop(loop)
        try:
            yielded = coro.send(None)
        except StopIteration as done:
            return done.value
        except BaseException:
            coro.close()
            raise
        finally:
            _set_running_loop(None)
        return loop.run_until_complete(_Resumed(coro, yielded).run())

    def close(self, abandoned: bool = False) -> None:
        with self._lock:
            loops, self._loops = list(self._loops.values()), {}
        for loop in loops:
            try:
                loop.close()
            except Exception:  # a loop still running on a wedged worker
                pass
        # Only once the run is over and its threads have been joined.
        pinned, self.pinned = self.pinned, []
        if not abandoned:
            _release_pinned(pinned)


_set_running_loop = asyncio.events._set_running_loop
_CoroutineType = types.CoroutineType


class _Resumed:
    """A coroutine whose first step already ran and yielded ``yielded``
    (a future of the thread's loop, or None for a bare yield): await it
    inside a task to hand the rest of its steps, throws (cancellation)
    included, to that task."""

    __slots__ = ("coro", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any) -> None:
        self.coro = coro
        self.yielded = yielded

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, out = self.coro, self.yielded
        while True:
            try:
                value = yield out
            except BaseException as exc:  # thrown in by the task: pass it on
                try:
                    out = coro.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                out = coro.send(value)
            except StopIteration as done:
                return done.value

    async def run(self) -> Any:
        return await self


class _Entry:
    __slots__ = ("handler", "run", "policy", "warned")

    def __init__(self, handler: Any, run: _RunState, policy: ExceptionPolicy) -> None:
        self.handler = handler
        self.run = run
        self.policy = policy
        self.warned = False  # a bad return value was logged at WARNING


_registry: Dict[int, _Entry] = {}
_registry_lock = threading.Lock()
_keys = itertools.count(1)


def _register(handler: Any, run: _RunState, policy: ExceptionPolicy = ExceptionPolicy.KILL) -> int:
    with _registry_lock:
        key = next(_keys)
        _registry[key] = _Entry(handler, run, policy)
    return key


def _unregister(key: int) -> bool:
    with _registry_lock:
        return _registry.pop(key, None) is not None


# ---- the callback ----
_NOTIF = struct.Struct("=QIIiIQ6Q")  # struct sandlock_notif (sandlock.h)
_NotifBytes = ctypes.c_char * 80
assert _NOTIF.size == ctypes.sizeof(_native.Notif) == 80
_unpack_notif = _NOTIF.unpack_from
_CTX_FIELDS = tuple(f.name for f in dataclasses.fields(HandlerCtx))
assert _CTX_FIELDS == ("id", "pid", "flags", "syscall_nr", "arch",
                       "instruction_pointer", "args", "_mem")


def _new_ctx(n: Tuple[Any, ...], ref: _MemRef) -> HandlerCtx:
    """HandlerCtx(*n[:6], n[6:], ref) without the frozen dataclass __init__
    (eight object.__setattr__ calls): same fields, same frozen instance."""
    ctx: HandlerCtx = _object_new(HandlerCtx)
    _object_setattr(ctx, "__dict__", {
        "id": n[0], "pid": n[1], "flags": n[2], "syscall_nr": n[3], "arch": n[4],
        "instruction_pointer": n[5], "args": n[6:], "_mem": ref,
    })
    return ctx


def _bad_return(entry: _Entry, action: object) -> None:
    """Log a handle() that returned something other than a NotifAction:
    at WARNING the first time per handler and run (a handler that does it
    on every call must not flood the log), at DEBUG afterwards."""
    try:
        level = logging.DEBUG if entry.warned else logging.WARNING
        entry.warned = True
        _log.log(level, "%s.handle() returned %s, not a NotifAction: treated as a "
                 "handler error (on_exception=%s)", type(entry.handler).__name__,
                 _short_repr(action), entry.policy.name)
    except BaseException:
        pass


def _short_repr(v: object, limit: int = 80) -> str:
    try:
        r = repr(v)
    except BaseException:
        r = "<%s>" % type(v).__name__
    return r if len(r) <= limit else r[:limit] + "..."


def _trampoline(ud: int, notif: int, mem: Optional[int], out: int) -> int:
    # ud, notif, mem, out are plain addresses (RAW_HANDLER_FN).  Never let
    # an exception escape: ctypes would print it and return 0 with the
    # action UNSET.  Any failure -> non-zero -> the exception policy.
    ref: Optional[_MemRef] = None
    action: Any = None
    try:
        entry = _registry.get(ud)
        if entry is None:
            return 1
        try:
            _pin.tls.pinned
        except AttributeError:
            _pin_thread_state(entry.run)
        ref = _MemRef(mem)
        ctx = _new_ctx(_unpack_notif(_NotifBytes.from_address(notif)), ref)
        action = entry.handler.handle(ctx)
        if type(action) is not NotifAction:  # fast path: a plain action
            if type(action) is _CoroutineType or inspect.isawaitable(action):
                action = entry.run.run_coroutine(action)
            if not isinstance(action, NotifAction):
                _bad_return(entry, action)
                return 1
        action._apply(out)
        action = None  # handed over: an injected fd now belongs to the C side
        return 0
    except BaseException:
        try:
            _log.debug("sandlock handler raised", exc_info=True)
        except BaseException:
            pass
        return 1
    finally:
        if ref is not None:
            ref.kill()
        # An inject action that was produced but not handed over: the caller
        # gave up the fd, so nobody else will close it.
        if action is not None and isinstance(action, NotifAction) and action._owns_fd():
            try:
                os.close(action.srcfd)
            except OSError:
                pass


_TRAMPOLINE = _native.RAW_HANDLER_FN(_trampoline)
_NO_UD_FREE = ctypes.cast(0, _native.UD_FREE_FN)  # a NULL function pointer
_GUARD = _native.guard_address()


def _is_async(handler: object) -> bool:
    fn = getattr(handler, "handle", None)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(type(handler), "handle", None)
    )


def _make_c_handler(handler: Any, policy: ExceptionPolicy, run: _RunState) -> Tuple[int, int]:
    """Create the C handler for one Handler instance.  Returns (ptr, key).
    The caller owns ptr until it passes it to sandlock_run_with_handlers
    (or frees it with sandlock_handler_free), and must _unregister(key)
    once the run is over."""
    key = _register(handler, run, policy)
    # ud is the key itself; no ud_free: there is nothing to free.
    h = _lib.sandlock_handler_new(_TRAMPOLINE, key, _NO_UD_FREE, int(policy))
    if not h:
        _unregister(key)
        raise MemoryError("sandlock_handler_new failed")
    _lib.sandlock_handler_set_guard(h, _GUARD)
    if _is_async(handler):
        _lib.sandlock_handler_set_deferred(h, True)
    return h, key
