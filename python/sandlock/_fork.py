"""COW fork mode: ``Sandbox(init_fn=, work_fn=).fork(n)`` and ``reduce``,
over the C ABI (sandlock_fork, src/fork/fork.c and src/fork/fork_child.c).

The C side makes the keeper (outside the sandbox), the template (which
confines itself, runs init, forks the clones) and the clones.  Python
hands it three callbacks: ``fork_fn`` is ``os.fork``, so every process of
the fork is a proper Python fork child (like multiprocessing's fork start
method) and init_fn and work_fn may be any Python callables; ``init``
applies the environment and runs init_fn in the template; ``work`` runs
work_fn in a clone with ``CLONE_ID`` in ``os.environ`` and ``sys.stdout``
on the clone's pipe.
"""
from __future__ import annotations


import ctypes
import dataclasses
import io
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

from . import _fields, _knobs, _native
from ._checks import argv as _argv
from ._native import Ptr
from ._result import Result, raise_from, read_result, run_failure, take_result
from ._run import SandboxLike
from .exceptions import PolicyTypeError, PolicyValueError

_lib = _native.lib

# Applied by the fork itself: cwd and timeout by the C side, env and
# clean_env by the init callback (os.environ must see them).
_APPLIED_HERE = (("cwd", None), ("env", ()), ("clean_env", False), ("timeout", None))
_CLEAN_ENV_KEEP = ("PATH", "HOME", "USER", "TERM", "LANG")


def _native_for_fork(sb: SandboxLike) -> Tuple[Ptr, Dict[str, str]]:
    """(native sandbox for sandlock_fork, the environment for the template)."""
    cfg = dict(sb._snapshot(None))
    probe = dict(cfg)
    for k, d in _APPLIED_HERE:
        probe[k] = d
    refused = _knobs.confine_refusal(probe, _fields.build)
    if refused:
        raise PolicyValueError("fork: %s cannot be applied to fork clones (no supervisor "
                               "runs for a fork)" % refused)
    env = _template_env(cfg["clean_env"], dict(cfg["env"]))
    cfg.update(env=(), clean_env=False, _confine=True)  # _confine: no max_processes
    return _fields.build(tuple(sorted(cfg.items()))), env


def _template_env(clean: bool, extra: Dict[str, str]) -> Dict[str, str]:
    if clean:
        env = {k: os.environ[k] for k in _CLEAN_ENV_KEEP if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    else:
        env = dict(os.environ)
    env.update(extra)
    return env


def _clone_count(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise PolicyTypeError("fork: n must be an int, not %s" % type(n).__name__)
    if n < 1:
        raise PolicyValueError("fork: n must be at least 1, got %d" % n)
    return n


def _flush_std() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except Exception:
            pass


def _exit_code(c: object) -> int:
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        sys.stderr.write("%s\n" % (c,))
    except Exception:
        pass
    return 1


def _callbacks(env: Dict[str, str], init_fn: Optional[Callable[[], object]],
               work_fn: Callable[[int], object]) -> Tuple[Any, Any, Any]:
    """The three C callbacks (keep them referenced during sandlock_fork).
    They run in forked children: they never raise into C."""

    def fork_cb(_ud: Any) -> int:
        try:
            return os.fork()
        except BaseException:
            return -1

    def init_cb(_ud: Any, buf: Any, size: int) -> int:
        try:
            os.environ.clear()
            os.environ.update(env)
            if init_fn is not None:
                init_fn()
            _flush_std()  # or every clone would repeat init_fn's buffered output
            return 0
        except BaseException:
            text = traceback.format_exc().encode(errors="replace")[:max(0, size - 1)]
            ctypes.memmove(buf, text + b"\0", len(text) + 1)
            return 1

    def work_cb(_ud: Any, clone_id: int) -> int:
        code = 1
        try:
            os.environ["CLONE_ID"] = str(clone_id)
            # Whatever sys.stdout was in the caller (a test's capture, say),
            # print() in the clone goes to the clone's pipe.
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False),
                                          encoding=getattr(sys.__stdout__, "encoding", None)
                                          or "utf-8", errors="backslashreplace")
            code = 0
            work_fn(clone_id)
        except SystemExit as e:
            code = _exit_code(e.code)
        except BaseException:
            try:
                traceback.print_exc()
            except BaseException:
                pass
            code = 1
        _flush_std()
        return code

    return _native.FORK_FN(fork_cb), _native.INIT_FN(init_cb), _native.WORK_FN(work_cb)


def start(sb: SandboxLike, n: int, init_fn: Optional[Callable[[], object]],
          work_fn: Optional[Callable[[int], object]]) -> ForkResult:
    n = _clone_count(n)
    if work_fn is None:
        raise PolicyValueError("fork: the Sandbox has no work_fn")
    ptr, env = _native_for_fork(sb)
    fork_cb, init_cb, work_cb = _callbacks(env, init_fn, work_fn)
    opts = _native.ForkOpts(ctypes.sizeof(_native.ForkOpts), init_cb, work_cb, fork_cb, None)
    _flush_std()  # or the template would write this process's buffered output again
    try:
        err, msg = _native.error_out()
        h = _lib.sandlock_fork_start(ptr, n, ctypes.byref(opts), ctypes.byref(err),
                               ctypes.byref(msg))
    finally:
        _lib.sandlock_sandbox_free(ptr)
    if not h:
        _raise(err, msg, "sandlock_fork_start")
    return ForkResult(h)


def _raise(err: ctypes.c_int, msg: ctypes.c_void_p, what: str) -> NoReturn:
    if err.value == _native.ERR_RUNNING:
        text = _native.take_string(msg.value)
        raise TimeoutError(text.decode(errors="replace") if text else what)
    raise_from(err, msg, what)


class ForkResult(_native.Closing):
    """The clones of one ``Sandbox.fork(n)``: ``pids`` (index = clone id),
    ``wait()`` for their Results, ``kill()``, and a context manager whose
    exit (or ``close()``, or collection) ends every clone still running."""

    def __init__(self, h: Ptr) -> None:
        self._h = h
        self.n = int(_lib.sandlock_fork_count(h))
        self.pids: List[int] = [int(_lib.sandlock_fork_pid(h, i)) for i in range(self.n)]
        self._results: Optional[List[Result]] = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "ForkResult(n=%d, pids=%r)" % (self.n, self.pids[:8])

    def __len__(self) -> int:
        return self.n

    def wait(self, timeout: Optional[float] = None) -> List[Result]:
        """Read every clone's stdout to its end and wait for all clones;
        return one Result per clone, in clone-id order (stdout capped by
        max_output; stderr is not captured: clones write to this process's
        stderr).  timeout (seconds, None: forever): TimeoutError if clones
        still run then (wait again to go on)."""
        with self._lock:
            if self._results is not None:
                return self._results
            if not self._h:
                raise RuntimeError("the ForkResult was closed before it was waited for")
            # Slices keep Ctrl-C working; the C call releases the GIL.
            deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
            while True:
                left = 0.2 if deadline is None else min(0.2, max(0.0, deadline - time.monotonic()))
                err, msg = _native.error_out()
                if _lib.sandlock_fork_wait(self._h, int(left * 1000), ctypes.byref(err),
                                           ctypes.byref(msg)) == 0:
                    break
                text = _native.take_string(msg.value)
                if err.value != _native.ERR_RUNNING:
                    raise RuntimeError("waiting failed: %s"
                                       % (text or b"").decode(errors="replace"))
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError("fork: clones are still running")
            self._results = [
                dataclasses.replace(read_result(_lib.sandlock_fork_result(self._h, i)),
                                    killed_by_handler=False)
                for i in range(self.n)]
            return self._results

    def kill(self) -> None:
        """End every clone still running (their Results say KILLED).  May
        be called from another thread while wait() blocks."""
        h = self._h
        if h:
            _lib.sandlock_fork_kill(h)

    def close(self) -> None:
        """Kill what still runs, release everything (Results stay)."""
        with self._lock:
            h, self._h = self._h, None
        if h:
            _lib.sandlock_fork_free(h)

    def _handle(self) -> Ptr:
        return self._h


def reduce(sb: SandboxLike, cmd: Sequence[str], clones: ForkResult,
           timeout: Optional[float] = None) -> Result:
    """Run cmd in sb with every clone's stdout, in clone-id order, on its
    stdin; its Result."""
    if not isinstance(clones, ForkResult):
        raise PolicyTypeError("reduce: clones must be the ForkResult of fork(), not %s"
                              % type(clones).__name__)
    argv = _argv(cmd)
    clones.wait()  # in Python first: interruptible, and the Results are kept
    nsb = sb._native_for(timeout)
    with clones._lock:
        h = clones._handle()
        if not h:
            raise RuntimeError("the ForkResult was closed before reduce()")
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        r = _lib.sandlock_fork_reduce(nsb.ptr, arr, len(argv), h, ctypes.byref(err),
                                 ctypes.byref(msg))
    if not r:
        return run_failure(err, msg, "reduce")
    return take_result(r)
