"""What one run of a Sandbox hands the C side, below sandbox.py and the
modules that run it (_process, _fork, _pipeline): the native policy
(NativeSandbox), the C handlers (Registrations), and SandboxLike, the part
of a Sandbox those modules use.  They take the Sandbox as a SandboxLike
argument, so none of them imports sandbox.py: the imports point one way,
from sandbox.py down.
"""

import threading
from collections.abc import Iterable as _IterableABC
from typing import Any, Dict, List, Optional, Protocol, Tuple

from . import _checks as ck
from . import _native
from ._action import ExceptionPolicy
from ._callback import _make_c_handler, _RunState, _unregister
from ._handlerbase import Handler, _validate_handler
from ._native import Cfg, Ptr
from .exceptions import PolicyTypeError

Snapshot = Tuple[Tuple[str, Any], ...]  # a run's configuration (_fields.snapshot)

_lib = _native.lib


class NativeSandbox(_native.Closing):
    """Owns a sandlock_sandbox_t; freed on close() or garbage collection."""

    def __init__(self, ptr: Ptr, snap: Snapshot = ()) -> None:
        self.ptr = ptr
        self._lock = threading.Lock()
        # What the native policy points into: the C functions of the trace=
        # and policy_fn= callbacks must outlive every run of it, cached or not.
        cfg = dict(snap)
        self._keep = (cfg.get("trace"), cfg.get("policy_fn"))

    def close(self) -> None:
        with self._lock:
            p, self.ptr = self.ptr, None
        if p:
            _lib.sandlock_sandbox_free(p)


class Registrations:
    """The C handlers of one run, made from (syscall, Handler) pairs.

    make() creates them (once a handler list is valid); from the moment
    they are passed to sandlock_run_with_handlers / sandlock_spawn the C
    side owns them.  close(), once the run is over (its threads joined),
    drops the strong references the registry holds."""

    def __init__(self, handlers: Any) -> None:
        if isinstance(handlers, (str, bytes)) or not isinstance(handlers, _IterableABC):
            raise PolicyTypeError("handlers must be a list of (syscall, Handler) pairs")
        self.pairs: List[Tuple[bytes, Handler, ExceptionPolicy]] = []
        for item in handlers:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise PolicyTypeError("each handler entry must be a (syscall, Handler) pair, "
                                      "got %r" % (item,))
            sc, h = item
            name = ck.syscall_name(sc)
            self.pairs.append((name.encode(), h, _validate_handler(h)))
        self._add_equivalents()
        self.run = _RunState()
        # id(handler) -> (c ptr, key); one C handler per instance
        self.made: Dict[int, Tuple[int, int]] = {}
        self.regs: Any = None  # the Registration array, once made
        self.n = len(self.pairs)

    def _add_equivalents(self) -> None:
        """A handler with ``_also_on`` (the path presets) is registered on
        the syscalls it names for each of its own, after it, unless the
        same handler already is: open(2) gets the preset given for openat."""
        have = {(name, id(h)) for name, h, _policy in self.pairs}
        for name, h, policy in list(self.pairs):
            for other in getattr(h, "_also_on", lambda _n: ())(name.decode()):
                if (other.encode(), id(h)) not in have:
                    have.add((other.encode(), id(h)))
                    self.pairs.append((other.encode(), h, policy))

    def make(self) -> None:
        try:
            for _name, h, policy in self.pairs:
                if id(h) not in self.made:
                    self.made[id(h)] = _make_c_handler(h, policy, self.run)
        except BaseException:
            for ptr, _key in self.made.values():
                _lib.sandlock_handler_free(ptr)  # frees the key cell
            self.made = {}
            raise
        self.regs = (_native.Registration * max(1, self.n))()
        for i, (name, h, _policy) in enumerate(self.pairs):
            self.regs[i].syscall = name
            self.regs[i].handler = self.made[id(h)][0]

    def close(self, abandoned: bool = True) -> None:
        """After the run: drop the strong references to the handlers.
        abandoned (the default when the run's end is unknown): a handler
        thread may still be running, so its thread states are kept."""
        made, self.made = self.made, {}
        for _ptr, key in made.values():
            _unregister(key)
        self.run.close(abandoned)


class SandboxLike(Protocol):
    """What the run modules use of a Sandbox (sandbox.Sandbox is one).
    ``__dict__`` holds the process a Sandbox runs (_process.attach)."""

    __dict__: Dict[str, Any]

    def _snapshot(self, timeout: Optional[float], overrides: Optional[Cfg] = None) -> Snapshot:
        """The configuration of a run (with this timeout)."""

    def _native_for(self, timeout: Optional[float],
                    overrides: Optional[Cfg] = None) -> NativeSandbox:
        """The (cached) native policy of the current configuration."""

    def _with_trace(self, handlers: Any) -> Any:
        """handlers plus the trace= handler, if any."""
