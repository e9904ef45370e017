"""Sandbox(trace=callable): one dict per denial and per handler decision.

The events are those of the CLI's ``--trace`` JSON lines (docs: "Seeing
what was denied"), as dicts:

- a file access the sandbox's fs rules refuse (Landlock refuses it in the
  kernel, where the supervisor never sees it, so a handler on open,
  openat, creat, execve and execveat lets every call proceed and judges
  the path against fs_readable / fs_writable / fs_denied):
  ``{"event": "denied", "syscall", "pid", "path", "access", "reason",
  "allow_flag" and "allow_path" (or "deny_path"), "message"}``;
- a call the supervisor refuses (a builtin, or a user handler's ERRNO or
  KILL), from the C tracing hook sandlock_sandbox_builder_on_decision:
  ``{"event": "denied", "syscall", "pid", "by", "action", "errno",
  "errno_name", "message"}``; the seccomp filter's own refusals come
  through the supervisor too (sandlock_sandbox_builder_report_filter_refusals),
  ``by`` "syscall filter" or "argument rules";
- any other decision of a user handler (RETURN_VALUE, INJECT_FD, HOLD):
  ``{"event": "decision", "syscall", "pid", "by": "handler", "action"}``.

The callable runs on the run's supervisor thread (or a deferred handler's
worker) while the traced call waits: keep it quick.  An exception in it is
logged (logger "sandlock", WARNING) and never affects the run.
"""
from __future__ import annotations

import ctypes
import errno as _errno
import logging
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import _native
from .handler import ExceptionPolicy, Handler, HandlerCtx, NotifAction

# One trace event: the fields of the CLI's --trace lines.
Event = Dict[str, Any]

_log = logging.getLogger("sandlock")

_K_CONTINUE, _K_ERRNO, _K_KILL = 1, 2, 7
_ACTION_NAMES = {2: "errno", 3: "return_value", 4: "inject_fd", 5: "inject_fd",
                 6: "hold", 7: "kill"}



# What a builtin's refusal means, and what (if anything) would allow it
# (the same words as the CLI's --trace).
_HINTS = {
    "process count": "the sandbox reached its max_processes limit; raise max_processes",
    "metadata guard": "metadata may change only inside fs_writable and outside fs_denied; "
                      "allow with fs_writable",
    "argument rules": "refused by the filter's argument rules; nothing allows it",
    "syscall filter": "refused by sandlock's blocklist or extra_deny_syscalls",
    "socket destinations": "the destination is not allowed by net_allow / "
                           "net_allow_unix; allow it there",
    "handler": "refused by a handler",
}


class Trace:
    """The trace= callable, wrapped.  Hashed by identity (it is part of the
    cached native policy's key) and the owner of the C callback, which
    must live as long as every native sandbox built with it."""

    __slots__ = ("fn", "c_fn", "_names", "__weakref__")

    def __init__(self, fn: Callable[[Event], object]) -> None:
        self.fn = fn
        self._names: Dict[int, str] = {}
        self.c_fn = _native.DECISION_FN(self._on_decision)

    def __repr__(self) -> str:
        return "Trace(%r)" % (self.fn,)

    def __call__(self, event: Event) -> None:
        self.emit(event)

    def emit(self, event: Event) -> None:
        try:
            self.fn(event)
        except Exception:  # noqa: BLE001 - a diagnostic must never break the run
            _log.warning("the trace callback %r raised; the run goes on", self.fn,
                         exc_info=True)

    def _name(self, nr: int) -> str:
        n = self._names.get(nr)
        if n is None:
            n = self._names[nr] = _native.syscall_name(nr) or str(nr)
        return n

    def _on_decision(self, _ud: Any, dptr: Any) -> None:
        try:
            d = dptr.contents
            by = d.decided_by.decode() if d.decided_by else None
            act = d.action.contents
            kind = act.kind
            if by is None or kind == _K_CONTINUE:
                return
            denied = kind in (_K_ERRNO, _K_KILL)
            if not denied and by != "handler":
                return  # a builtin performed the call for the guest: allowed
            n = d.notif.contents
            name = self._name(n.syscall_nr)
            ev: Event = {"event": "denied" if denied else "decision", "syscall": name,
                  "pid": int(n.pid), "by": by, "action": _ACTION_NAMES.get(kind, str(kind))}
            if kind == _K_ERRNO:
                e = int(act.u.errno_value)
                ev["errno"] = e
                if e in _errno.errorcode:
                    ev["errno_name"] = _errno.errorcode[e]
            if denied:
                ev["message"] = "denied %s (%s): %s" % (
                    name, by, _HINTS.get(by, "refused by the supervisor"))
        except Exception:  # noqa: BLE001 - never raise into C
            _log.warning("trace: could not describe a decision", exc_info=True)
            return
        self.emit(ev)


def check(name: str, value: Any) -> Optional[Trace]:
    """The trace= field's validator: None or a callable."""
    from .exceptions import PolicyTypeError

    if value is None or isinstance(value, Trace):
        return value
    if not callable(value):
        raise PolicyTypeError("%s must be a callable taking one dict, or None; got %r"
                              % (name, value))
    return Trace(value)


# ---------------------------------------------------------------- file accesses

def _under(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _roots(paths: Iterable[Any]) -> List[str]:
    out: List[str] = []
    for p in paths:
        try:
            out.append(os.path.realpath(os.fspath(p)))
        except (OSError, TypeError, ValueError):
            pass
    return out


def _open_access(flags: int) -> Optional[str]:
    if flags & getattr(os, "O_PATH", 0o10000000):
        return None  # Landlock does not check O_PATH opens
    if (flags & os.O_ACCMODE) != os.O_RDONLY or flags & (os.O_TRUNC | os.O_CREAT):
        return "write"
    return "read"


# SANDLOCK_DEFAULT_DEVICES of sandlock.h (test_devmin.py checks they agree):
# every sandbox may read and write these without a grant.
DEFAULT_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def _grant_dir(path: str, exists: bool) -> str:
    """What a grant should name: a device as itself, a directory as
    itself, a file as its directory."""
    if exists and (os.path.isdir(path) or path.startswith("/dev/")):
        return path
    return os.path.dirname(path) or "/"


class _FileJudge(Handler):
    """Lets every call proceed (the kernel decides) and reports the file
    accesses the run's fs rules refuse."""

    on_exception = ExceptionPolicy.CONTINUE

    def __init__(self, trace: Trace, readable: Iterable[Any], writable: Iterable[Any],
                 denied: Iterable[Any]) -> None:
        self.trace = trace
        self.read, self.write, self.deny = _roots(readable), _roots(writable), _roots(denied)
        nr = _native.lib.sandlock_syscall_nr
        self.calls: Dict[int, Tuple[str, Optional[int], int, Optional[int]]] = {}
        for name, dirfd, path, flags in (("open", None, 0, 1), ("openat", 0, 1, 2),
                                         ("creat", None, 0, None), ("execve", None, 0, None),
                                         ("execveat", 0, 1, None)):
            n = nr(name.encode())
            if n >= 0:
                self.calls[n] = (name, dirfd, path, flags)

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        try:
            self._judge(ctx)
        except Exception:  # noqa: BLE001
            _log.warning("trace: could not judge a file access", exc_info=True)
        return NotifAction.continue_()

    def _absolute(self, pid: int, dirfd: Optional[int], p: str) -> str:
        if p == "/proc/self" or p.startswith("/proc/self/"):
            return "/proc/%d%s" % (pid, p[10:])
        if p.startswith("/"):
            return p
        base = "/proc/%d/cwd" % pid if dirfd is None or dirfd == -100 else \
            "/proc/%d/fd/%d" % (pid, dirfd)
        return os.path.join(os.readlink(base), p)

    def _judge(self, ctx: HandlerCtx) -> None:
        call = self.calls.get(ctx.syscall_nr)
        if call is None:
            return
        name, dirfd_arg, path_arg, flags_arg = call
        acc: Optional[str]
        if name.startswith("exec"):
            acc, creates = "execute", False
        elif flags_arg is None:  # creat
            acc, creates = "write", True
        else:
            flags = ctx.args[flags_arg]
            acc, creates = _open_access(flags), bool(flags & os.O_CREAT)
        if acc is None:
            return
        raw = ctx.read_cstr(ctx.args[path_arg])
        if not raw:
            return
        dirfd = None if dirfd_arg is None else ctypes.c_int32(ctx.args[dirfd_arg]).value
        path = os.path.realpath(self._absolute(ctx.pid, dirfd, raw))
        exists = os.path.lexists(path)
        if not exists and not creates:
            return  # ENOENT for the guest, not a denial
        self._report(name, ctx.pid, path, exists, acc)

    def _report(self, syscall: str, pid: int, path: str, exists: bool, acc: str) -> None:
        if acc != "execute" and path in DEFAULT_DEVICES:
            return
        ev: Event = {"event": "denied", "syscall": syscall, "pid": int(pid), "path": path,
              "access": acc}
        deny = next((d for d in self.deny if _under(path, d)), None)
        writable = any(_under(path, w) for w in self.write)
        readable = writable or any(_under(path, r) for r in self.read)
        if deny is not None:
            ev.update(reason="inside an fs_denied path", deny_path=deny)
            ev["message"] = "denied %s %s (%s): inside an fs_denied path %s" % (
                syscall, path, acc, deny)
        elif acc == "write" and not writable:
            ev.update(reason="not under any fs_writable", allow_flag="fs_writable",
                      allow_path=_grant_dir(path, exists))
        elif acc != "write" and not readable:
            ev.update(reason="not under any fs_readable/fs_writable",
                      allow_flag="fs_readable", allow_path=_grant_dir(path, exists))
        else:
            return
        if "message" not in ev:
            ev["message"] = "denied %s %s (%s): %s; allow with %s=[%r]" % (
                syscall, path, acc, ev["reason"], ev["allow_flag"], ev["allow_path"])
        self.trace.emit(ev)


def handlers(trace: Optional[Trace], cfg: _native.Cfg) -> List[Tuple[int, Handler]]:
    """The (syscall, Handler) pairs that report refused file accesses."""
    if trace is None:
        return []
    j = _FileJudge(trace, cfg.get("fs_readable", ()), cfg.get("fs_writable", ()),
                   cfg.get("fs_denied", ()))
    return [(nr, j) for nr in sorted(j.calls)]
