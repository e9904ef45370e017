"""Ready-made handlers.  Not re-exported from the root ``sandlock`` package.

    from sandlock.presets import PathDenyHandler, COMMON_PATH_SYSCALLS
    deny = PathDenyHandler(deny=["/etc/*"])
    sb.run_with_handlers(cmd, [(s, deny) for s in COMMON_PATH_SYSCALLS])

How the path presets see paths
------------------------------
They read the path argument as the child passed it (``ctx.read_path``) and
match fnmatch patterns (``*`` also matches ``/``, so ``/etc/*`` covers the
whole tree) against:

* the raw string;
* for an absolute path, its lexical normalization (``//``, ``.`` and ``..``
  collapsed), so ``/etc/../etc/passwd`` is seen as ``/etc/passwd``;
* for a relative path, the absolute path obtained by joining it to the
  child's cwd (AT_FDCWD, or the non-``*at`` syscalls) or to the directory
  of its dirfd (``/proc/PID/cwd`` / ``/proc/PID/fd/N``), confirmed by a
  child-memory read that the notification is still live.

Limitations (these handlers are policy for cooperative programs; use
Landlock — ``fs_readable``/``fs_denied`` — as the security boundary):

* symlinks are not resolved: ``/tmp/link -> /etc/passwd`` is matched as
  ``/tmp/link``;
* the decision is made on a copy of the path and the call then CONTINUEs,
  so the kernel re-reads the path: a multi-threaded child can swap the
  string between the check and the use (TOCTOU);
* an empty path (``newfstatat(fd, "", AT_EMPTY_PATH)``, i.e. fstat) looks
  nothing up and is always let through;
* patterns should be absolute; a relative path whose base cannot be
  resolved is only matched raw by PathDenyHandler and is denied by
  PathAllowHandler (fail closed).
"""

import errno as _errno
import fnmatch
import logging
import os
import posixpath
from typing import Callable, Optional

from .handler import PATH_ARG_SYSCALLS, ExceptionPolicy, Handler, HandlerCtx, NotifAction

__all__ = [
    "COMMON_PATH_SYSCALLS",
    "AuditPathsHandler",
    "PathDenyHandler",
    "PathAllowHandler",
    "LogSyscallsHandler",
]

COMMON_PATH_SYSCALLS = [
    "openat", "unlinkat", "newfstatat", "statx", "faccessat",
    "readlinkat", "mkdirat", "execveat", "execve",
]

_AT_FDCWD = -100


def _check_max_len(max_len):
    if not isinstance(max_len, int) or isinstance(max_len, bool):
        raise TypeError("max_len must be an int")
    if max_len <= 0:
        raise ValueError("max_len must be > 0")
    return max_len


def _check_errno(value):
    NotifAction.errno(value)  # same validation as the action itself
    return value


def _patterns(name, value):
    if isinstance(value, (str, bytes)):
        raise TypeError(
            "%s must be a list of str patterns, not a single string (wrap it: [%r])"
            % (name, value)
        )
    if not isinstance(value, (list, tuple)):
        raise TypeError("%s must be a list of str patterns, not %s" % (name, type(value).__name__))
    for p in value:
        if not isinstance(p, str):
            raise TypeError("%s: pattern must be str, got %r" % (name, p))
    return tuple(value)


def _lexnorm(path):
    # posixpath.normpath keeps a leading "//" (POSIX allows it to be
    # special); Linux does not treat it specially, so collapse it.
    return "/" + posixpath.normpath(path).lstrip("/")


def _base_dir(ctx, argidx):
    """Directory a relative path argument is resolved against, or None."""
    if argidx == 1:  # every *at syscall in the table: dirfd is arg 0
        dirfd = ctx.args[0] & 0xFFFFFFFF
        dirfd = dirfd - (1 << 32) if dirfd >= 1 << 31 else dirfd
    else:
        dirfd = _AT_FDCWD
    link = "/proc/%d/cwd" % ctx.pid if dirfd == _AT_FDCWD else "/proc/%d/fd/%d" % (ctx.pid, dirfd)
    try:
        base = os.readlink(link)
    except OSError:
        return None
    # The pid could have died and been reused between the notification and
    # the readlink: a successful child-memory read (checked against the
    # notification id by the C side) proves the caller was still there.
    if ctx.read(ctx.args[argidx], 1) is None or not base.startswith("/"):
        return None
    return base


def _views(ctx, max_len):
    """(raw path or None, absolute normalized path or None)."""
    raw = ctx.read_path(max_len=max_len)
    if raw is None:
        return None, None
    if raw == "":
        # An empty path looks nothing up: it either fails with ENOENT or,
        # with AT_EMPTY_PATH, acts on the already-open dirfd (fstat via
        # newfstatat(fd, "", AT_EMPTY_PATH)), whose open was already checked.
        return "", ""
    if raw.startswith("/"):
        return raw, _lexnorm(raw)
    argidx = PATH_ARG_SYSCALLS.get(ctx.syscall_nr)
    base = None if argidx is None else _base_dir(ctx, argidx)
    if base is None:
        return raw, None
    return raw, _lexnorm(base + "/" + raw)


def _matches(patterns, path):
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


class AuditPathsHandler(Handler):
    """Calls ``callback(path, ctx)`` for every intercepted syscall and lets
    it proceed.  ``path`` is the raw path string, or None when it cannot be
    read (or the syscall has no single path argument)."""

    on_exception = ExceptionPolicy.CONTINUE  # audit must never block

    def __init__(self, callback: Callable[[Optional[str], HandlerCtx], None], max_len: int = 4096):
        if not callable(callback):
            raise TypeError("callback must be callable")
        self.callback = callback
        self.max_len = _check_max_len(max_len)

    def handle(self, ctx):
        try:
            path = ctx.read_path(max_len=self.max_len)
        except ValueError:  # multi-path or unknown syscall
            path = None
        self.callback(path, ctx)
        return NotifAction.continue_()


class PathDenyHandler(Handler):
    """Fails the call with ``errno`` when its path matches any of ``deny``
    (fnmatch patterns); otherwise continues.  An unreadable path continues:
    a deny-list does not claim everything else is allowed.  See the module
    docstring for how paths are matched and the limitations."""

    on_exception = ExceptionPolicy.KILL  # security handler: fail closed

    def __init__(self, deny, errno: int = _errno.EPERM, max_len: int = 4096):
        self.deny = _patterns("deny", deny)
        self.errno = _check_errno(errno)
        self.max_len = _check_max_len(max_len)

    def handle(self, ctx):
        raw, norm = _views(ctx, self.max_len)
        if not raw:  # unreadable (None) or empty: see _views
            return NotifAction.continue_()
        if _matches(self.deny, raw) or (norm is not None and _matches(self.deny, norm)):
            return NotifAction.errno(self.errno)
        return NotifAction.continue_()


class PathAllowHandler(Handler):
    """Continues only when the call's path matches one of ``allow`` (fnmatch
    patterns); everything else — including a path that cannot be read or
    resolved — fails with ``errno`` (fail closed).  Both the path as given
    and its normalized absolute form must match, so ``/ok/../etc/passwd``
    is not let through by ``/ok/*``."""

    on_exception = ExceptionPolicy.KILL  # security handler: fail closed

    def __init__(self, allow, errno: int = _errno.EACCES, max_len: int = 4096):
        self.allow = _patterns("allow", allow)
        self.errno = _check_errno(errno)
        self.max_len = _check_max_len(max_len)

    def handle(self, ctx):
        raw, norm = _views(ctx, self.max_len)
        if raw == "":  # no lookup happens: see _views
            return NotifAction.continue_()
        if norm is None:
            return NotifAction.errno(self.errno)
        if raw.startswith("/") and not _matches(self.allow, raw):
            return NotifAction.errno(self.errno)
        if not _matches(self.allow, norm):
            return NotifAction.errno(self.errno)
        return NotifAction.continue_()


class LogSyscallsHandler(Handler):
    """Logs ``syscall=N pid=P args=(a0, a1, a2, a3, a4, a5)`` per call and
    continues.  ``logger`` is any ``Callable[[str], None]``; by default
    ``logging.getLogger("sandlock.audit").info``.  A raising logger is
    absorbed (on_exception=CONTINUE): the call proceeds, the line is lost."""

    on_exception = ExceptionPolicy.CONTINUE  # observational

    def __init__(self, logger: Optional[Callable[[str], None]] = None):
        if logger is None:
            logger = logging.getLogger("sandlock.audit").info
        if not callable(logger):
            raise TypeError("logger must be callable")
        self.logger = logger

    @staticmethod
    def format(ctx) -> str:
        return "syscall=%d pid=%d args=(%s)" % (
            ctx.syscall_nr, ctx.pid, ", ".join(str(a) for a in ctx.args))

    def handle(self, ctx):
        self.logger(self.format(ctx))
        return NotifAction.continue_()
