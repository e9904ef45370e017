"""Ready-made handlers.  Not re-exported from the root ``sandlock`` package.

    from sandlock.presets import PathDenyHandler, ALL_PATH_SYSCALLS
    deny = PathDenyHandler(deny=["/etc/*"])
    sb.run_with_handlers(cmd, [(s, deny) for s in ALL_PATH_SYSCALLS])

Which syscalls to register
--------------------------
``ALL_PATH_SYSCALLS`` lists every x86_64 syscall that takes a path and that
a handler can trap (the mount family, swapon, acct, quotactl,
name_to_handle_at and uselib are denied by the sandbox itself); register a
security preset on all of them.  ``COMMON_PATH_SYSCALLS`` is the shorter
list of the handler spec.  A path preset registered on a syscall is also
registered on its legacy and newer equivalents (open, creat and openat2
for openat; stat, lstat and statx for newfstatat; unlink and rmdir for
unlinkat; ...), each call reaching it as itself (``ctx.syscall_nr``), so
the spec's recipe on ``COMMON_PATH_SYSCALLS`` is not bypassed by open(2)
or stat(2).  Syscalls with no equivalent in the list you give (rename,
link, symlink, truncate, chmod, xattrs, ...) are covered only by
``ALL_PATH_SYSCALLS``.

How the path presets see paths
------------------------------
They read each path argument of the call (both paths of rename*, link*
and symlink*; the path of fanotify_mark, inotify_add_watch, ...) and match
fnmatch patterns (``*`` also matches ``/``, so ``/etc/*`` covers the whole
tree) against:

* the raw string;
* for an absolute path, its lexical normalization (``//``, ``.`` and ``..``
  collapsed), so ``/etc/../etc/passwd`` is seen as ``/etc/passwd``;
* for a relative path, the absolute path obtained by joining it to the
  child's cwd (AT_FDCWD, or the non-``*at`` syscalls) or to the directory
  of its dirfd (``/proc/PID/cwd`` / ``/proc/PID/fd/N``), confirmed by a
  child-memory read that the notification is still live;
* for symlink/symlinkat, the link's target too (joined to the link's
  directory when relative): a link to a denied file is refused;
* for open, creat, openat and openat2: the real path of the file actually
  opened.  These are not continued: the file is opened on the child's
  behalf (``HandlerCtx.open_on_behalf``: the arguments are read once, the
  open runs confined by the sandbox's own Landlock ruleset) and the fd is
  injected only if the opened file passes, so neither a symlink nor a
  second thread rewriting the path can change what was checked.  Patterns
  must therefore also cover where files really are (on a merged-/usr
  system ``/lib/...`` opens ``/usr/lib/...``).  ``on_behalf=False``
  restores check-then-continue for them (faster, racy).

Limitations (use Landlock — ``fs_readable``/``fs_denied`` — as the security
boundary; these handlers add policy on top):

* every other syscall is decided on a copy of its path and then CONTINUEs,
  so the kernel reads the path again: a multi-threaded child can swap the
  string between the check and the use (TOCTOU; docs/security.md lists what each
  syscall exposes), and symlinks are not resolved for them;
* an empty path (``newfstatat(fd, "", AT_EMPTY_PATH)``, i.e. fstat) looks
  nothing up and is always let through, as is a NULL path where the call
  then acts on its fd (utimensat, fanotify_mark);
* patterns should be absolute; a relative path whose base cannot be
  resolved is only matched raw by PathDenyHandler and is denied by
  PathAllowHandler (fail closed).
"""

import errno as _errno
import fnmatch
import logging
import os
import posixpath
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

from . import _native
from .handler import PATH_ARG_SYSCALLS, ExceptionPolicy, Handler, HandlerCtx, NotifAction

__all__ = [
    "COMMON_PATH_SYSCALLS",
    "ALL_PATH_SYSCALLS",
    "AuditPathsHandler",
    "PathDenyHandler",
    "PathAllowHandler",
    "LogSyscallsHandler",
]

COMMON_PATH_SYSCALLS = [
    "openat", "unlinkat", "newfstatat", "statx", "faccessat",
    "readlinkat", "mkdirat", "execveat", "execve",
]

# Where the paths of each path-bearing x86_64 syscall are, from the
# kernel's prototypes: name -> ((path arg, dirfd arg or None), ...).  None:
# relative to the cwd (inotify_add_watch's arg 0 is the inotify fd, not a
# dirfd).  _TARGET marks symlink's first argument: the link's content, a
# string the kernel stores, resolved later from the link's directory.
_TARGET = "target"
_PATH_SPECS: Dict[str, Tuple[Tuple[int, Union[int, None, str]], ...]] = {
    "open": ((0, None),), "creat": ((0, None),),
    "openat": ((1, 0),), "openat2": ((1, 0),),
    "stat": ((0, None),), "lstat": ((0, None),), "newfstatat": ((1, 0),),
    "statx": ((1, 0),), "statfs": ((0, None),),
    "access": ((0, None),), "faccessat": ((1, 0),), "faccessat2": ((1, 0),),
    "chmod": ((0, None),), "fchmodat": ((1, 0),), "fchmodat2": ((1, 0),),
    "chown": ((0, None),), "lchown": ((0, None),), "fchownat": ((1, 0),),
    "truncate": ((0, None),), "chdir": ((0, None),), "chroot": ((0, None),),
    "readlink": ((0, None),), "readlinkat": ((1, 0),),
    "execve": ((0, None),), "execveat": ((1, 0),),
    "utime": ((0, None),), "utimes": ((0, None),), "futimesat": ((1, 0),),
    "utimensat": ((1, 0),),
    "setxattr": ((0, None),), "lsetxattr": ((0, None),),
    "getxattr": ((0, None),), "lgetxattr": ((0, None),),
    "listxattr": ((0, None),), "llistxattr": ((0, None),),
    "removexattr": ((0, None),), "lremovexattr": ((0, None),),
    "inotify_add_watch": ((1, None),), "fanotify_mark": ((4, 3),),
    "unlink": ((0, None),), "unlinkat": ((1, 0),),
    "mkdir": ((0, None),), "mkdirat": ((1, 0),), "rmdir": ((0, None),),
    "mknod": ((0, None),), "mknodat": ((1, 0),),
    "rename": ((0, None), (1, None)), "renameat": ((1, 0), (3, 2)),
    "renameat2": ((1, 0), (3, 2)),
    "link": ((0, None), (1, None)), "linkat": ((1, 0), (3, 2)),
    "symlink": ((1, None), (0, _TARGET)), "symlinkat": ((2, 1), (0, _TARGET)),
}

#: Every path-bearing syscall a handler can trap on this machine (x86_64:
#: all of _PATH_SPECS).  Register security presets on all of them.  Not
#: included because the sandbox denies them outright: mount, umount2,
#: pivot_root, move_mount, open_tree, fspick, mount_setattr, swapon,
#: swapoff, acct, quotactl, name_to_handle_at, uselib; answered ENOSYS:
#: setxattrat, getxattrat, listxattrat, removexattrat, file_getattr,
#: file_setattr.
ALL_PATH_SYSCALLS = [n for n in _PATH_SPECS if _native.syscall_nr(n) >= 0]

# Syscalls that do the same thing with the same kind of path (legacy and
# newer forms).  A path preset registered on one of them is also
# registered on the others (Handler._also_on): a deny or allow list given
# the spec's COMMON_PATH_SYSCALLS is not bypassed by open(2), stat(2),
# rename(2), ...  Each call still reaches the handler as itself
# (ctx.syscall_nr), so its paths are read where that syscall keeps them.
_EQUIVALENTS = (
    ("open", "creat", "openat", "openat2"),
    ("stat", "lstat", "newfstatat", "statx"),
    ("access", "faccessat", "faccessat2"),
    ("chmod", "fchmodat", "fchmodat2"),
    ("chown", "lchown", "fchownat"),
    ("readlink", "readlinkat"),
    ("unlink", "unlinkat", "rmdir"),
    ("mkdir", "mkdirat"),
    ("mknod", "mknodat"),
    ("rename", "renameat", "renameat2"),
    ("link", "linkat"),
    ("symlink", "symlinkat"),
    ("execve", "execveat"),
    ("utime", "utimes", "futimesat", "utimensat"),
    ("setxattr", "lsetxattr"), ("getxattr", "lgetxattr"),
    ("listxattr", "llistxattr"), ("removexattr", "lremovexattr"),
)
_EQUIVALENT_OF = {n: tuple(x for x in g if x != n and _native.syscall_nr(x) >= 0)
                  for g in _EQUIVALENTS for n in g}


class _PathPreset(Handler):
    """A handler that reads every path syscall's paths where that syscall
    keeps them: registered on one syscall, it is registered on that
    syscall's equivalents too (see _EQUIVALENTS)."""

    def __init__(self, errno: int, max_len: int, on_behalf: bool) -> None:
        self.errno = _check_errno(errno)
        self.max_len = _check_max_len(max_len)
        self.on_behalf = _check_on_behalf(on_behalf)

    def _also_on(self, syscall: str) -> Tuple[str, ...]:
        return _EQUIVALENT_OF.get(syscall, ())


_SPECS_BY_NR = {_native.syscall_nr(n): spec for n, spec in _PATH_SPECS.items()
                if _native.syscall_nr(n) >= 0}
_OPEN_NRS = frozenset(
    n for n in map(_native.syscall_nr, ("open", "creat", "openat", "openat2")) if n >= 0
)

_AT_FDCWD = -100
# (the path as given or None if unreadable, its absolute normalized form
# or None if it cannot be resolved)
View = Tuple[Optional[str], Optional[str]]


def _check_max_len(max_len: object) -> int:
    if not isinstance(max_len, int) or isinstance(max_len, bool):
        raise TypeError("max_len must be an int")
    if max_len <= 0:
        raise ValueError("max_len must be > 0")
    return max_len


def _check_errno(value: int) -> int:
    NotifAction.errno(value)  # same validation as the action itself
    return value


def _patterns(name: str, value: object) -> Tuple[str, ...]:
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


def _lexnorm(path: str) -> str:
    # posixpath.normpath keeps a leading "//" (POSIX allows it to be
    # special); Linux does not treat it specially, so collapse it.
    return "/" + posixpath.normpath(path).lstrip("/")


def _signed_fd(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _base_dir(ctx: HandlerCtx, dirfd_arg: Optional[int], path_arg: int) -> Optional[str]:
    """Directory a relative path argument is resolved against, or None."""
    dirfd = _AT_FDCWD if dirfd_arg is None else _signed_fd(ctx.args[dirfd_arg])
    link = "/proc/%d/cwd" % ctx.pid if dirfd == _AT_FDCWD else "/proc/%d/fd/%d" % (ctx.pid, dirfd)
    try:
        base = os.readlink(link)
    except OSError:
        return None
    # The pid could have died and been reused between the notification and
    # the readlink: a successful child-memory read (checked against the
    # notification id by the C side) proves the caller was still there.
    if ctx.read(ctx.args[path_arg], 1) is None or not base.startswith("/"):
        return None
    return base


def _view(ctx: HandlerCtx, path_arg: int, dirfd_arg: Optional[int],
          max_len: int) -> View:
    """(raw path or None, absolute normalized path or None) of one argument."""
    raw = ctx.read_cstr(ctx.args[path_arg], max_len) if ctx.args[path_arg] else None
    if raw is None:
        return None, None
    if raw == "":
        # An empty path looks nothing up: it either fails with ENOENT or,
        # with AT_EMPTY_PATH, acts on the already-open dirfd (fstat via
        # newfstatat(fd, "", AT_EMPTY_PATH)), whose open was already checked.
        return "", ""
    if raw.startswith("/"):
        return raw, _lexnorm(raw)
    base = _base_dir(ctx, dirfd_arg, path_arg)
    if base is None:
        return raw, None
    return raw, _lexnorm(base + "/" + raw)


def _views(ctx: HandlerCtx, max_len: int) -> List[View]:
    """[(raw, norm), ...]: every path of the call (see _PATH_SPECS).  Other
    syscalls: their read_path argument (ValueError if they have none)."""
    spec = _SPECS_BY_NR.get(ctx.syscall_nr)
    if spec is None:
        arg = PATH_ARG_SYSCALLS.get(ctx.syscall_nr)
        if arg is None:
            ctx.read_path(max_len=max_len)  # raises the ValueError that explains it
            return []  # not reached: read_path raised
        return [_view(ctx, arg, 0 if arg == 1 else None, max_len)]
    out: List[View] = []
    for path_arg, dirfd_arg in spec:
        if not isinstance(dirfd_arg, str):  # not _TARGET
            out.append(_view(ctx, path_arg, dirfd_arg, max_len))
            continue
        # symlink's target: relative to the directory the link is made in
        target = ctx.read_cstr(ctx.args[path_arg], max_len) if ctx.args[path_arg] else None
        if target is None or target == "" or target.startswith("/"):
            out.append((target, None if target is None else _lexnorm(target) if target else ""))
            continue
        link_norm = out[0][1] if out else None
        norm = None if not link_norm else _lexnorm(posixpath.dirname(link_norm) + "/" + target)
        out.append((target, norm))
    return out


def _matches(patterns: Iterable[str], path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


class AuditPathsHandler(Handler):
    """Calls ``callback(path, ctx)`` for every intercepted syscall and lets
    it proceed.  ``path`` is the raw path string, or None when it cannot be
    read (or the syscall has no single path argument)."""

    on_exception = ExceptionPolicy.CONTINUE  # audit must never block

    def __init__(self, callback: Callable[[Optional[str], HandlerCtx], None],
                 max_len: int = 4096) -> None:
        if not callable(callback):
            raise TypeError("callback must be callable")
        self.callback = callback
        self.max_len = _check_max_len(max_len)

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        try:
            path = ctx.read_path(max_len=self.max_len)
        except ValueError:  # multi-path or unknown syscall
            path = None
        self.callback(path, ctx)
        return NotifAction.continue_()


def _live(ctx: HandlerCtx) -> bool:
    """True when ctx holds a live notification (a running sandbox's call).
    Otherwise (a ctx made by a unit test, a replay) there is no memory to
    read every path from and nothing to open on the guest's behalf: the
    path presets then decide exactly as the spec words them, from
    ``ctx.read_path()``."""
    m = getattr(ctx, "_mem", None)
    return m is not None and bool(getattr(m, "ptr", None))


def _check_on_behalf(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError("on_behalf must be a bool")
    return value


class PathDenyHandler(_PathPreset):
    """Fails the call with ``errno`` when one of its paths matches any of
    ``deny`` (fnmatch patterns); otherwise lets it proceed.  An unreadable
    path proceeds: a deny-list does not claim everything else is allowed.

    open, creat, openat and openat2 are opened on the child's behalf and
    refused when the file actually opened matches (race-free; see the
    module docstring); ``on_behalf=False`` continues them instead.
    Register it on ``ALL_PATH_SYSCALLS``."""

    on_exception = ExceptionPolicy.KILL  # security handler: fail closed

    def __init__(self, deny: Union[List[str], Tuple[str, ...]], errno: int = _errno.EPERM,
                 max_len: int = 4096, on_behalf: bool = True) -> None:
        self.deny = _patterns("deny", deny)
        super().__init__(errno, max_len, on_behalf)

    def _denied(self, path: str) -> bool:
        return _matches(self.deny, path)

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        if not _live(ctx):  # the spec's rule, from read_path (see _live)
            path = ctx.read_path(max_len=self.max_len)
            if path is not None and self._denied(path):
                return NotifAction.errno(self.errno)
            return NotifAction.continue_()
        for raw, norm in _views(ctx, self.max_len):
            if not raw:  # unreadable (None) or empty: see _view
                continue
            if self._denied(raw) or (norm is not None and self._denied(norm)):
                return NotifAction.errno(self.errno)
        if self.on_behalf and ctx.syscall_nr in _OPEN_NRS:
            return ctx.open_on_behalf(allow=lambda real, _st: not self._denied(real),
                                      errno=self.errno)
        return NotifAction.continue_()


class PathAllowHandler(_PathPreset):
    """Lets the call proceed only when every one of its paths matches one of
    ``allow`` (fnmatch patterns); everything else — including a path that
    cannot be read or resolved — fails with ``errno`` (fail closed).  Both
    the path as given and its normalized absolute form must match, so
    ``/ok/../etc/passwd`` is not let through by ``/ok/*``.

    open, creat, openat and openat2 are opened on the child's behalf and the
    file actually opened must match too (race-free, symlinks resolved; see
    the module docstring); ``on_behalf=False`` continues them instead.
    Register it on ``ALL_PATH_SYSCALLS``."""

    on_exception = ExceptionPolicy.KILL  # security handler: fail closed

    def __init__(self, allow: Union[List[str], Tuple[str, ...]], errno: int = _errno.EACCES,
                 max_len: int = 4096, on_behalf: bool = True) -> None:
        self.allow = _patterns("allow", allow)
        super().__init__(errno, max_len, on_behalf)

    def _allowed(self, path: str) -> bool:
        return _matches(self.allow, path)

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        if not _live(ctx):  # the spec's rule, from read_path (see _live)
            path = ctx.read_path(max_len=self.max_len)
            if path is not None and self._allowed(path):
                return NotifAction.continue_()
            return NotifAction.errno(self.errno)
        for raw, norm in _views(ctx, self.max_len):
            if raw == "":  # no lookup happens: see _view
                continue
            if raw is None or norm is None:  # unreadable, or not resolved
                return NotifAction.errno(self.errno)
            if raw.startswith("/") and not self._allowed(raw):
                return NotifAction.errno(self.errno)
            if not self._allowed(norm):
                return NotifAction.errno(self.errno)
        if self.on_behalf and ctx.syscall_nr in _OPEN_NRS:
            return ctx.open_on_behalf(allow=lambda real, _st: self._allowed(real),
                                      errno=self.errno)
        return NotifAction.continue_()


class LogSyscallsHandler(Handler):
    """Logs ``syscall=N pid=P args=(a0, a1, a2, a3, a4, a5)`` per call and
    continues.  ``logger`` is any ``Callable[[str], None]``; by default
    ``logging.getLogger("sandlock.audit").info``.  A raising logger is
    absorbed (on_exception=CONTINUE): the call proceeds, the line is lost."""

    on_exception = ExceptionPolicy.CONTINUE  # observational

    def __init__(self, logger: Optional[Callable[[str], None]] = None) -> None:
        if logger is None:
            logger = logging.getLogger("sandlock.audit").info
        if not callable(logger):
            raise TypeError("logger must be callable")
        self.logger = logger

    @staticmethod
    def format(ctx: HandlerCtx) -> str:
        return "syscall=%d pid=%d args=(%s)" % (
            ctx.syscall_nr, ctx.pid, ", ".join(str(a) for a in ctx.args))

    def handle(self, ctx: HandlerCtx) -> NotifAction:
        self.logger(self.format(ctx))
        return NotifAction.continue_()
