"""Pinning a Python thread state on each supervisor / worker thread that
calls a handler, so that later calls on that thread reuse it (see below)."""

import os
import sys as _sys
import threading
from typing import Any, List

from . import _native

# On every callback from a thread Python did not create, ctypes calls
# PyGILState_Ensure, which makes a brand-new PyThreadState (allocating and
# later unmapping its frame stack: an mmap + munmap per call), and
# PyGILState_Release, which destroys it.  That is most of the cost of a
# Python handler (~10 us of ~18 us).  So the first callback on such a thread
# takes one extra PyGILState_Ensure reference: ctypes' Release then leaves
# the state alive, and later callbacks on that thread reuse it.
#
# Releasing it: sandlock joins its supervisor and deferred worker threads
# before sandlock_run_with_handlers returns, so when the run is over those
# threads are gone and their pinned states are orphans.  _RunState.close()
# (the caller's thread, GIL held) then clears and deletes each of them.
# Nothing runs at thread exit: a pthread TLS destructor cannot do it (glibc
# has already cleared CPython's own TLS slot by then), and entering Python
# at thread exit could meet a finalizing interpreter.  If the run's caller
# never gets back into Python (interpreter exit during a run), the states
# are freed by the interpreter's own teardown.
#
# Deleting another thread's state with PyThreadState_Delete is clean up to
# CPython 3.11; from 3.12 on it also clears the *calling* thread's gilstate
# slot, so pinning is only enabled before 3.12 (later versions keep the
# per-call thread state: correct, just slower).

_GILSTATE_LOCKED = 0  # PyGILState_STATE


class _Pin:
    __slots__ = ("enabled", "tls", "ensure", "release", "this_tstate", "clear", "delete")

    ensure: Any  # the thread-state calls (_native.thread_state_api)
    release: Any
    this_tstate: Any
    clear: Any
    delete: Any

    def __init__(self) -> None:
        self.enabled = False
        self.tls = threading.local()


_pin = _Pin()


def _pin_setup() -> None:
    if os.environ.get("SANDLOCK_PY_NO_PIN") or _sys.version_info >= (3, 12):
        return
    if getattr(_sys, "implementation", None) is None or _sys.implementation.name != "cpython":
        return
    api = _native.thread_state_api()
    if api is None:
        return  # no pinning: every callback pays for a fresh thread state
    _pin.ensure, _pin.release, _pin.this_tstate, _pin.clear, _pin.delete = api
    _pin.enabled = True


def _pin_thread_state(run: Any) -> None:
    """First callback (GIL held) on a thread state: pin it if it is the
    throwaway one ctypes made for a thread Python did not create."""
    _pin.tls.pinned = True  # once per thread state, whatever happens below
    if not _pin.enabled or run is None:
        return
    # Called from _trampoline: if that is the bottom frame, no Python code
    # was running on this thread, i.e. ctypes just created its state.  (A
    # Python thread's state must never be pinned: it is deleted later.)
    if _sys._getframe(1).f_back is not None:
        return
    ts = _pin.this_tstate()
    if not ts:
        return
    _pin.ensure()  # GIL already held: only counts one more reference
    run.pinned.append(ts)


def _release_pinned(pinned: List[int]) -> None:
    """Delete the pinned states of a finished run's threads (GIL held).

    Only valid once those threads are joined (they run no more code and
    will never touch their state again): _RunState.close() guarantees it."""
    for ts in pinned:
        _pin.clear(ts)
        _pin.delete(ts)


_pin_setup()
