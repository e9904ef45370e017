"""policy_fn: the dynamic policy callback (docs: "Dynamic policy").

The C side (src/builtins/policy.c) calls one trampoline per event on the
supervisor thread while the guest's call is held; the trampoline builds a
SyscallEvent and a PolicyContext, calls the user's function and turns its
return value into a verdict.  Anything that goes wrong in the callback
(an exception, a verdict that means nothing) refuses the call: a broken
policy never silently allows.
"""
from __future__ import annotations

import ctypes
import dataclasses
import errno as _errno
import os
import sys
import traceback
from typing import Any, Callable, Iterable, List, Optional, Tuple, Union

from . import _native

_lib = _native.lib

ALLOW = 0
DENY = -1
AUDIT = -2
KILL = -3




class SyscallEvent:
    """One event of the sandbox, seen while the guest's call waits.

    ``syscall`` ("execve", "connect", ...), ``category`` ("process" or
    "network"), ``pid`` (the calling thread), ``parent_pid``, ``host`` and
    ``port`` (the destination of a network event, numeric IP), ``argv``
    (a tuple of str for exec events: what the exec really runs), and
    ``denied`` (the static policy already refused it; the verdict cannot
    undo that).  ``path`` is always None: a path string read from the
    guest could change after the check (use PolicyContext.deny_path)."""

    __slots__ = ("syscall", "category", "pid", "parent_pid", "path", "host", "port", "argv",
                 "denied")
    syscall: Optional[str]
    category: Optional[str]
    pid: int
    parent_pid: int
    path: Optional[str]
    host: Optional[str]
    port: int
    argv: Optional[Tuple[str, ...]]
    denied: bool

    def __init__(self, syscall: Optional[str], category: Optional[str], pid: int,
                 parent_pid: int = 0, host: Optional[str] = None, port: int = 0,
                 argv: Optional[Tuple[str, ...]] = None, denied: bool = False) -> None:
        # Frozen, as the reference's: set once here, never again.
        for k, v in (("syscall", syscall), ("category", category), ("pid", pid),
                     ("parent_pid", parent_pid), ("path", None), ("host", host),
                     ("port", port), ("argv", argv), ("denied", denied)):
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError("cannot assign to field %r" % name)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError("cannot delete field %r" % name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SyscallEvent):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def path_contains(self, s: str) -> bool:
        """Always False: paths are not exposed on events."""
        return self.path is not None and s in self.path

    def argv_contains(self, s: str) -> bool:
        """True if any argv element contains s."""
        return self.argv is not None and any(s in a for a in self.argv)

    def __repr__(self) -> str:
        return "SyscallEvent(syscall=%r, category=%r, pid=%r, host=%r, port=%r, argv=%r)" % (
            self.syscall, self.category, self.pid, self.host, self.port, self.argv)


def _abs_path(name: str, path: Union[str, "os.PathLike[str]"]) -> str:
    """path as an absolute str, or ValueError naming the method."""
    p = os.fspath(path)
    if not isinstance(p, str) or not os.path.isabs(p) or "\0" in p:
        raise ValueError("%s: %r is not an absolute path" % (name, path))
    return p


def _ips(name: str, ips: Any) -> List[str]:
    if isinstance(ips, (str, bytes)):
        raise TypeError("%s: expected a list of IP addresses, got a single %s %r"
                        % (name, type(ips).__name__, ips))
    out: List[str] = []
    for ip in ips:
        if not isinstance(ip, str):
            raise TypeError("%s: an IP address must be a str, got %r" % (name, ip))
        out.append(ip)
    return out


class PolicyContext:
    """Tightens the running sandbox; valid only during the policy_fn call."""

    def __init__(self, ptr: _native.Ptr) -> None:
        self._ptr = ptr

    def _live(self, what: str) -> int:
        if not self._ptr:
            raise RuntimeError("PolicyContext.%s: only valid inside the policy_fn call" % what)
        return self._ptr

    def deny_path(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """From now on, opening path or anything below it fails with
        EACCES (decided on the file actually opened)."""
        p = _abs_path("deny_path", path)
        rc = _lib.sandlock_policy_deny_path(self._live("deny_path"), os.fsencode(p))
        if rc < 0:
            raise ValueError("deny_path: cannot deny %r: %s" % (p, os.strerror(-rc)))

    def allow_path(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Undo a deny_path of exactly this path."""
        p = _abs_path("allow_path", path)
        rc = _lib.sandlock_policy_allow_path(self._live("allow_path"), os.fsencode(p))
        if rc < 0:
            raise ValueError("allow_path: %r: %s" % (p, os.strerror(-rc)))

    def _net(self, name: str, fn: Callable[..., int], ips: Iterable[str]) -> None:
        v = _ips(name, ips)
        arr = (ctypes.c_char_p * max(1, len(v)))(*[s.encode() for s in v])
        rc = fn(self._live(name), arr, len(v))
        if rc == -_errno.EINVAL:
            raise ValueError("%s: not an IP address in %r" % (name, v))
        if rc < 0:
            raise OSError(-rc, "%s: %s" % (name, os.strerror(-rc)))

    def restrict_network(self, ips: Iterable[str]) -> None:
        """From now on only these IPs may be reached ([] blocks all)."""
        self._net("restrict_network", _lib.sandlock_policy_restrict_network, ips)

    def grant_network(self, ips: Iterable[str]) -> None:
        """Let these IPs through an earlier restrict_network again."""
        self._net("grant_network", _lib.sandlock_policy_grant_network, ips)

    def kill(self) -> None:
        """End the whole sandbox once policy_fn returns."""
        _lib.sandlock_policy_kill(self._live("kill"))

    def restrict_max_memory(self, n: Union[int, str]) -> None:
        """Lower the sandbox's memory budget to n bytes (an int or a size
        such as "256M"): its memory cgroup's limit, else every process's
        RLIMIT_AS.  Tighten only: a larger value than the current one is
        ignored."""
        from ._checks import parse_memory_size

        _lib.sandlock_ctx_restrict_max_memory(self._live("restrict_max_memory"),
                                              parse_memory_size(n))

    def restrict_max_processes(self, n: int) -> None:
        """Lower max_processes to n for the forks that follow (tighten only)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 0xFFFFFFFF:
            raise ValueError("restrict_max_processes: expected a count >= 1, got %r" % (n,))
        _lib.sandlock_ctx_restrict_max_processes(self._live("restrict_max_processes"), n)

    def restrict_pid_network(self, pid: int, ips: Iterable[str]) -> None:
        """From now on process pid (and its threads) may reach only these IPs
        (narrowing on repeated calls)."""
        if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= 0xFFFFFFFF:
            raise ValueError("restrict_pid_network: bad pid %r" % (pid,))
        v = _ips("restrict_pid_network", ips)
        import ipaddress

        for ip in v:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                raise ValueError("restrict_pid_network: not an IP address: %r" % ip) from None
        arr = (ctypes.c_char_p * max(1, len(v)))(*[s.encode() for s in v])
        _lib.sandlock_ctx_restrict_pid_network(self._live("restrict_pid_network"), pid, arr,
                                               len(v))


def verdict(v: object) -> Tuple[int, Optional[str]]:
    """The C verdict of a policy_fn return value, and a complaint when
    the value means nothing (then: deny with EPERM)."""
    if v is None or v is False:
        return ALLOW, None
    if v is True:
        return DENY, None
    if isinstance(v, str):
        w = {"allow": ALLOW, "deny": DENY, "audit": AUDIT, "kill": KILL}.get(v.lower())
        if w is None:
            return DENY, "policy_fn returned %r (expected allow/deny/audit/kill)" % (v,)
        return w, None
    if isinstance(v, int):
        if v in (ALLOW, DENY, AUDIT, KILL) or 0 < v < 4096:
            return int(v), None
    return DENY, "policy_fn returned %r (expected a bool, an errno, a verdict)" % (v,)


def _s(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else os.fsdecode(b)


def _event(e: Any) -> SyscallEvent:
    argv: Optional[Tuple[str, ...]] = None
    if e.argv:
        argv = tuple(os.fsdecode(e.argv[i]) for i in range(e.argc))
    return SyscallEvent(_s(e.syscall), _s(e.category), e.pid, e.parent_pid, _s(e.host),
                        e.port, argv, bool(e.denied))


class Hook:
    """One policy_fn and the C trampoline calling it (kept alive by every
    native sandbox built with it)."""

    def __init__(self, fn: Callable[..., object]) -> None:
        if not callable(fn):
            raise TypeError("policy_fn must be callable, got %r" % (fn,))
        self.fn = fn
        self.cfunc = _native.POLICY_FN(self._call)

    def _call(self, ud: Any, ev: Any, ctxp: Any) -> int:
        ctx = PolicyContext(ctxp)
        try:
            w, complaint = verdict(self.fn(_event(ev.contents), ctx))
            if complaint:
                sys.stderr.write("sandlock: %s; the call is refused\n" % complaint)
            return w
        except BaseException:  # fail closed: a broken policy refuses
            sys.stderr.write("sandlock: policy_fn raised; the call is refused:\n")
            traceback.print_exc()
            return DENY
        finally:
            ctx._ptr = None

    def __repr__(self) -> str:
        return "policy_fn(%r)" % (self.fn,)


def check(name: str, value: Any) -> Optional[Hook]:
    """The Sandbox field's validator: None or a callable (wrapped)."""
    if value is None or isinstance(value, Hook):
        return value
    return Hook(value)


def user_fn(hook: Optional[Hook]) -> object:
    """The callable a policy_fn field was given (what == compares)."""
    return getattr(hook, "fn", None)
