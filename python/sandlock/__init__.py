"""sandlock: run a command confined by Landlock + seccomp, from Python.

    import sandlock
    sb = sandlock.Sandbox(fs_readable=["/usr", "/lib", "/lib64", "/etc", "/bin"])
    r = sb.run(["/bin/cat", "/etc/hostname"])
    print(r.success, r.stdout)

Errors (see ``sandlock.exceptions``): an invalid configuration or handler
registration raises PolicyError (PolicyValueError / PolicyTypeError, which
are also ValueError / TypeError) at once; a failure to start the sandbox
raises a SandboxError subclass.  Every sandlock error is a SandlockError (a
plain Exception subclass, NOT OSError: its ``code`` is a SANDLOCK_ERR_*
number, not an errno).  A command that cannot be found or executed is not
an error: ``run`` returns a failed Result (exit code 127 / 126).  Preset
handlers live in ``sandlock.presets`` and are deliberately not re-exported
here.
"""

import collections
import datetime
import ctypes
import dataclasses
import enum
import fractions
import os
import re
import threading
from collections.abc import Iterable as _IterableABC, Mapping as _MappingABC
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from . import _knobs
from . import _trace
from . import _chroot
from . import _cow
from . import _http
from ._cow import BranchAction, Change
from . import _policy
from ._policy import PolicyContext, SyscallEvent
from ._knobs import Protection, ProtectionStatus, min_landlock_abi
from .exceptions import (
    BranchConflictError,
    BranchError,
    ChildError,
    ConfinementError,
    ForkError,
    LandlockUnavailableError,
    MemoryProtectError,
    NotifError,
    PolicyError,
    PolicyTypeError,
    PolicyValueError,
    SandboxError,
    SandlockError,
    SeccompError,
    ERR_NOT_FOUND,
    ERR_SYSCALL,
    error_for,
)
from .handler import ExceptionPolicy, Handler, HandlerCtx, NotifAction, _validate_handler
from ._callback import _make_c_handler, _RunState, _unregister

# One source for the version: SANDLOCK_VERSION in include/sandlock.h, as the
# loaded library reports it (the package metadata is read from it too).
__version__: str = _native.lib.sandlock_version().decode()

__all__ = [
    "BranchAction",
    "Change",
    "DryRunResult",
    "BranchConflictError",
    "BranchError",
    "ChildError",
    "ConfinementError",
    "ExceptionPolicy",
    "ExitReason",
    "ForkError",
    "ForkResult",
    "Gather",
    "GatherPipeline",
    "Handler",
    "HandlerCtx",
    "LandlockUnavailableError",
    "MemoryProtectError",
    "NotifAction",
    "NamedStage",
    "NotifError",
    "Pipeline",
    "PolicyContext",
    "PolicyError",
    "Protection",
    "ProtectionStatus",
    "Process",
    "Result",
    "Sandbox",
    "SandboxError",
    "SandlockError",
    "SeccompError",
    "confine",
    "Stage",
    "StdioMode",
    "Fd",
    "Usage",
    "SyscallEvent",
    "inputs",
    "landlock_abi_version",
    "min_landlock_abi",
    "parse_ports",
    "parse_memory_size",
    "list_profiles",
    "load_profile",
]

_lib = _native.lib


def _raise_from(err, msg, what, building=False):
    text = _native.take_string(msg.value)
    text = text.decode(errors="replace") if text else what + " failed"
    raise error_for(err.value or 7, text, building)


class ExitReason(enum.IntEnum):
    """How the command ended; the values are the C ABI's
    (``sandlock_result_reason``).  ``str()`` gives the lower-case name."""

    EXITED = 0    # exited on its own; exit_code is its status
    SIGNALED = 1  # died of a signal other than SIGKILL
    KILLED = 2    # died of SIGKILL (from any source), or a handler ended it
    TIMEOUT = 3   # sandlock killed it when the timeout expired

    def __str__(self):
        return self.name.lower()

    def __format__(self, spec):
        return format(str(self), spec)


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of one run (immutable).

    ``killed_by_handler`` tells a handler's kill (a KILL action, or a handler
    failure under ``on_exception=KILL``) from any other death; such a run's
    reason is KILLED whatever the signal.  ``error`` explains a run whose
    command could not even be started (e.g. not found on PATH), else None.
    ``stdout_truncated`` / ``stderr_truncated`` count the bytes discarded
    past the sandbox's ``max_output`` cap (0: the stream is complete)."""

    success: bool
    exit_code: int  # status if exited; 128+signal if signaled/killed; 124 on timeout
    reason: ExitReason
    signal: int     # the signal that ended the command, -1 if none did
    stdout: bytes
    stderr: bytes
    killed_by_handler: bool = False
    error: Optional[str] = None
    # Bytes discarded past the max_output cap (0: the stream is complete).
    stdout_truncated: int = 0
    stderr_truncated: int = 0


@dataclasses.dataclass(frozen=True)
class DryRunResult(Result):
    """Outcome of ``Sandbox.dry_run``: the run's Result fields, plus
    ``changes``, what the run would have done to the workdir (a list of
    ``Change``, sorted by path); nothing of it was applied."""

    changes: List[Change] = dataclasses.field(default_factory=list)


def _bytes_at(p, n) -> bytes:
    """n bytes at address p.  ctypes.string_at takes a C int size, so it
    fails beyond 2 GiB; a sized array view has no such limit."""
    if not p or not n:
        return b""
    if n < 1 << 31:
        return ctypes.string_at(p, n)
    return (ctypes.c_char * n).from_address(p).raw


def _read_fields(r, dry_run=False):
    """(Result or DryRunResult, the workdir's branch report) of native
    result r (borrowed: not freed here)."""
    def grab(fn):
        n = ctypes.c_size_t(0)
        p = fn(r, ctypes.byref(n))
        return _bytes_at(p, n.value)

    reason = ExitReason(int(_lib.sandlock_result_reason(r)))  # the reference's meaning
    branch = _cow.report(r)
    error = _lib.sandlock_result_error(r)  # the command never ran: why
    more = {"changes": branch.changes} if dry_run else {}
    return (DryRunResult if dry_run else Result)(
        success=bool(_lib.sandlock_result_success(r)),
        exit_code=int(_lib.sandlock_result_exit_code(r)),
        reason=reason,
        # As the reference: a signal number for SIGNALED only (a SIGKILL,
        # a handler's kill or a timeout has none).
        signal=int(_lib.sandlock_result_signal(r)),
        stdout=grab(_lib.sandlock_result_stdout_bytes),
        stderr=grab(_lib.sandlock_result_stderr_bytes),
        killed_by_handler=bool(_lib.sandlock_result_killed_by_handler(r)),
        stdout_truncated=int(_lib.sandlock_result_stdout_truncated(r)),
        stderr_truncated=int(_lib.sandlock_result_stderr_truncated(r)),
        error=error.decode(errors="replace") if error else None,
        **more
    ), branch


def _read_result(r) -> Result:
    """A Result from native result r (borrowed: not freed here)."""
    return _read_fields(r)[0]


def _take_result(r, dry_run=False) -> Result:
    """The Result of native result r (freed here).  A workdir commit that
    failed or hit conflicts raises BranchError / BranchConflictError
    (with ``.result``); a dry run returns a DryRunResult instead."""
    res, branch = _take_fields(r, dry_run)
    if not dry_run:
        branch.raise_if_failed(res)
    return res


def _take_fields(r, dry_run):
    """_read_fields of native result r, which is freed."""
    try:
        return _read_fields(r, dry_run)
    finally:
        _lib.sandlock_result_free(r)


def _not_found_result(text) -> Result:
    """What a run whose command is not on PATH returns: the same as a
    missing absolute path (exit status 127, the reason on stderr)."""
    return Result(success=False, exit_code=127, reason=ExitReason.EXITED, signal=-1,
                  stdout=b"", stderr=("sandlock: %s\n" % text).encode(errors="replace"),
                  error=text)


def _run_failure(err, msg, what):
    """Result for a bare command that is not found; raise for anything else."""
    text = _native.take_string(msg.value)
    text = text.decode(errors="replace") if text else what + " failed"
    if err.value == ERR_NOT_FOUND and text.startswith("command not found"):
        return _not_found_result(text)
    raise error_for(err.value or 7, text, False)


# ---- argument validation (bad configuration is a PolicyError) ----
def _path_list(name, value) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes, os.PathLike)):
        raise PolicyTypeError("%s must be a list of paths, not a single %s"
                              % (name, type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise PolicyTypeError("%s must be a list of paths, not %s"
                              % (name, type(value).__name__)) from None
    return tuple(_path(name, p) for p in items)


def _path(name, p) -> str:
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise PolicyTypeError("%s: expected a path (str), got %s" % (name, type(p).__name__))
    s = os.fsdecode(os.fspath(p))
    if not s:
        raise PolicyValueError("%s: empty path" % name)
    if "\0" in s:
        raise PolicyValueError("%s: path contains a NUL byte" % name)
    return s


def _opt_path(name, p) -> Optional[str]:
    return None if p is None else _path(name, p)


def _items(name, value, what) -> list:
    """value as a list: any iterable but a str or bytes (a likely mistake
    for a list of one), else PolicyTypeError naming the field."""
    if isinstance(value, (str, bytes)):
        raise PolicyTypeError("%s must be a list of %s, not a %s"
                              % (name, what, type(value).__name__))
    try:
        return list(value)
    except TypeError:
        raise PolicyTypeError("%s must be a list of %s, not %s"
                              % (name, what, type(value).__name__)) from None


def _ports(name, value) -> Tuple[int, ...]:
    items = _items(name, value, "ports")
    out = []
    for p in items:
        if not isinstance(p, int) or isinstance(p, bool):
            raise PolicyTypeError("%s: port must be an int, got %r" % (name, p))
        if not 1 <= p <= 65535:
            raise PolicyValueError("%s: port %d out of range 1..65535" % (name, p))
        out.append(int(p))
    return tuple(out)


def _specs(name, value, deny=False) -> Tuple:
    """Endpoint rules: str specs (checked now, naming the rule) or int ports."""
    items = _items(name, value, "rules")
    out = []
    for r in items:
        if isinstance(r, int) and not isinstance(r, bool) and not deny:
            out.extend(_ports(name, [r]))
            continue
        if not isinstance(r, str):
            raise PolicyTypeError("%s: rule must be a str%s, got %r"
                                  % (name, "" if deny else " or an int port", r))
        why = _lib.sandlock_net_spec_error(r.encode(), 1 if deny else 0)
        if why:
            text = ctypes.string_at(why).decode(errors="replace")
            _lib.sandlock_string_free(why)
            raise PolicyValueError("%s %r: %s" % (name, r, text))
        out.append(r)
    return tuple(out)


_SCHEME_RE = re.compile(r"^[a-z]+://")


def _rule_host(rule):
    """The target of an endpoint rule (no scheme, no ports), or None."""
    if not isinstance(rule, str):
        return None
    t = _SCHEME_RE.sub("", rule)
    if t.startswith("["):
        return None  # an IPv6 literal
    return t.split(":", 1)[0].split("/", 1)[0]


def _names_a_host(rule) -> bool:
    """True when rule's target is a hostname (resolved when a run builds)."""
    import ipaddress

    h = _rule_host(rule)
    if not h or h == "*":
        return False
    try:
        ipaddress.ip_address(h)
        return False
    except ValueError:
        return True


def _offline_rule(rule):
    """rule with a hostname target replaced by a documentation address
    (RFC 5737): the construction-time check must not need DNS."""
    if not _names_a_host(rule):
        return rule
    h = _rule_host(rule)
    i = rule.index(h, len(_SCHEME_RE.match(rule).group(0)) if _SCHEME_RE.match(rule) else 0)
    return rule[:i] + "192.0.2.1" + rule[i + len(h):]


def _deny_specs(name, value) -> Tuple:
    return _specs(name, value, True)


_PORTSPEC_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _bind_specs(name, value) -> Tuple[str, ...]:
    """Bind ports: ints, "N", "lo-hi", comma lists of those, or the
    wildcard "*" (alone, repeated or not): each port once, sorted."""
    items = _items(name, value, "ports")
    wild = [p for p in items if p == "*"]
    ports = parse_ports([p for p in items if p != "*"], _what=name)
    if wild and name == "net_deny_bind":
        raise PolicyValueError("net_deny_bind: the wildcard '*' cannot be denied (an empty "
                               "net_allow_bind already denies every bind)")
    if wild and ports:
        raise PolicyValueError("%s: the wildcard '*' cannot be mixed with ports" % name)
    return ("*",) if wild else tuple(str(p) for p in ports)


def parse_ports(ports, _what="parse_ports"):
    """The ports of a list of ints, "N", "lo-hi" strings or comma lists of
    those ("8080,9000-9005", the CLI's grammar), each once, sorted (as the
    reference): ``parse_ports([80, "443", "8000-8005"])`` is
    ``[80, 443, 8000, 8001, 8002, 8003, 8004, 8005]``."""
    if isinstance(ports, (str, bytes, int)):
        raise PolicyTypeError("%s: expected a list of ports" % _what)
    out = set()
    for p in ports:
        if isinstance(p, bool) or not isinstance(p, (int, str)):
            raise PolicyTypeError("%s: port must be an int or a str, got %r" % (_what, p))
        for part in [p] if isinstance(p, int) else p.split(","):
            out.update(_port_range(_what, part))
    return sorted(out)


def _port_range(what, part):
    """range of one port or "lo-hi" spec."""
    if isinstance(part, int):
        lo = hi = part
    else:
        m = _PORTSPEC_RE.match(part.strip())
        if not m:
            raise PolicyValueError("%s: bad port %r (use N, lo-hi or a comma list)" % (what, part))
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
    if not (1 <= lo <= 65535 and 1 <= hi <= 65535):
        raise PolicyValueError("%s: port %r out of range 1..65535" % (what, part))
    if lo > hi:
        raise PolicyValueError("%s: empty port range %r" % (what, part))
    return range(lo, hi + 1)


def _env(name, env) -> dict:
    if env is None:
        return {}
    if not isinstance(env, _MappingABC):
        raise PolicyTypeError("%s must be a dict of str -> str, not %s" % (name, type(env).__name__))
    for k, v in env.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise PolicyTypeError("%s keys and values must be str, got %r=%r" % (name, k, v))
        if not k or "=" in k or "\0" in k or "\0" in v:
            raise PolicyValueError("invalid environment variable %r" % k)
    return dict(env)


def _bool(name, value) -> bool:
    if not isinstance(value, bool):
        raise PolicyTypeError("%s must be a bool, not %s" % (name, type(value).__name__))
    return value


def _max_processes(name, value) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise PolicyTypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if not 1 <= value <= 0xFFFFFFFF:
        raise PolicyValueError("%s must be in 1..4294967295, got %d" % (name, value))
    return int(value)


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_memory_size(value: Union[int, str]) -> int:
    """A memory size in bytes: an int, or a str such as "512M", "1.5G",
    "64k", "2MiB" or "4096".  Units are binary (K = 1024) and case-blind;
    a fraction is rounded down to whole bytes.  Raises PolicyValueError /
    PolicyTypeError (also ValueError / TypeError) for anything else, or
    for a size that is not in 1 byte .. 2**64-1."""
    if isinstance(value, bool):
        raise PolicyTypeError("memory size must be an int or a size string, not bool")
    if isinstance(value, int):
        n = int(value)
    elif isinstance(value, str):
        m = _SIZE_RE.match(value)
        if not m:
            raise PolicyValueError("cannot parse memory size %r (use e.g. '512M', '1.5G')" % value)
        n = int(fractions.Fraction(m.group(1)) * _SIZE_MULT[m.group(2).lower()])
    else:
        raise PolicyTypeError("memory size must be an int or a size string, not %s"
                              % type(value).__name__)
    if n <= 0 or n >= 1 << 64:
        raise PolicyValueError("memory size must be 1 byte .. 2**64-1, got %d" % n)
    return n


parse_size = parse_memory_size  # the name this package used first


def _max_memory(name, value) -> Optional[int]:
    return None if value is None else parse_memory_size(value)


def _max_output(name, value) -> Optional[int]:
    """None (the library's default, 64 MiB), 0 (no cap), or bytes / a size string."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return value
    try:
        return parse_memory_size(value)
    except PolicyError as e:
        raise type(e)("%s: %s" % (name, e.message)) from None


def _timeout(name, value) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PolicyTypeError("%s must be a number of seconds, not %s" % (name, type(value).__name__))
    if not value > 0 or value != value or value == float("inf"):
        raise PolicyValueError("%s must be a positive finite number of seconds, got %r"
                               % (name, value))
    return float(value)


def _random_seed(name, value) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyTypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if not 0 <= value < 1 << 64:
        raise PolicyValueError("%s must be in 0..2**64-1, got %d" % (name, value))
    return int(value)


def _syscall_groups(name, value) -> Tuple[str, ...]:
    """A list of syscall group names (the C library knows which exist)."""
    if value is None or isinstance(value, (str, bytes)):
        raise PolicyTypeError("%s must be a list of group names, not %s"
                              % (name, "None" if value is None else "a single " + type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise PolicyTypeError("%s must be a list of group names, not %s"
                              % (name, type(value).__name__)) from None
    for g in items:
        if not isinstance(g, str):
            raise PolicyTypeError("%s: a group name must be a str, got %r" % (name, g))
        if not g or "\0" in g:
            raise PolicyValueError("%s: invalid group name %r" % (name, g))
    return tuple(items)


def parse_time_start(value) -> int:
    """A time_start value as Unix nanoseconds: a number of seconds since the
    epoch (int or float), a datetime (naive = UTC), or an RFC 3339 / ISO 8601
    string such as "2000-01-01T00:00:00Z" or "2026-03-01 12:00:00+01:00"."""
    if isinstance(value, bool):
        raise PolicyTypeError("time_start must be a number, datetime or str, not bool")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise PolicyValueError("time_start must be finite, got %r" % (value,))
        ns = int(fractions.Fraction(value) * 1000000000)
    else:
        if isinstance(value, str):
            text = value.strip()
            if text[-1:] in ("Z", "z"):
                text = text[:-1] + "+00:00"
            try:
                value = datetime.datetime.fromisoformat(text)
            except ValueError:
                raise PolicyValueError("cannot parse time_start %r (use e.g. "
                                       "'2000-01-01T00:00:00Z')" % value) from None
        if not isinstance(value, datetime.datetime):
            raise PolicyTypeError("time_start must be a number, datetime or str, not %s"
                                  % type(value).__name__)
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        ns = (delta.days * 86400 + delta.seconds) * 1000000000 + delta.microseconds * 1000
    if not 0 <= ns < 1 << 63:
        raise PolicyValueError("time_start must be at or after 1970-01-01T00:00:00Z")
    return ns


def _time_start(name, value) -> Optional[int]:
    return None if value is None else parse_time_start(value)


_NAME_MAX = 64  # bytes, like a hostname (HOST_NAME_MAX)


def _name(name, value) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise PolicyTypeError("%s must be a str, not %s" % (name, type(value).__name__))
    if not value:
        raise PolicyValueError("%s must not be empty" % name)
    if "\0" in value:
        raise PolicyValueError("%s must not contain a NUL byte" % name)
    n = len(value.encode("utf-8", "surrogateescape"))
    if n > _NAME_MAX:
        raise PolicyValueError("%s must be at most %d bytes (got %d)" % (name, _NAME_MAX, n))
    return value


def _callable(name, fn):
    if fn is not None and not callable(fn):
        raise PolicyTypeError("%s must be callable, not %s" % (name, type(fn).__name__))
    return fn


def _argv(cmd) -> Tuple[bytes, ...]:
    if isinstance(cmd, (str, bytes)):
        raise TypeError("cmd must be a list of str (e.g. ['/bin/ls', '-l']), not a single string")
    try:
        items = list(cmd)
    except TypeError:
        raise TypeError("cmd must be a list of str, not %s" % type(cmd).__name__) from None
    if not items:
        raise ValueError("cmd must not be empty")
    out = []
    for a in items:
        if not isinstance(a, (str, bytes, os.PathLike)):
            raise TypeError("cmd items must be str, got %s" % type(a).__name__)
        b = os.fsencode(a)
        if b"\0" in b:
            raise ValueError("cmd item contains a NUL byte: %r" % (a,))
        out.append(b)
    if not out[0]:
        raise ValueError("cmd[0] must not be empty")
    return tuple(out)


def _syscall_name(entry) -> str:
    """A handler registration's syscall: a name or a number on the native
    arch; the name to register either way."""
    if isinstance(entry, bool) or not isinstance(entry, (str, int)):
        raise PolicyTypeError("syscall must be a name (str) or number (int), got %r" % (entry,))
    if isinstance(entry, int):
        name = _native.syscall_name(int(entry)) if 0 <= entry <= 0xFFFF else None
        if name is None:
            raise PolicyValueError(ERR_SYSCALL, "unknown syscall number %d" % entry)
        return name
    if not entry or "\0" in entry or _native.syscall_nr(entry) < 0:
        raise PolicyValueError(ERR_SYSCALL, "unknown syscall %r" % entry)
    return entry


class _Field:
    """A Sandbox config field: validated (and normalized) when assigned.
    The normalized value lives in the instance's ``_cfg`` dict (what runs
    use); reading the attribute gives it back as the reference's dataclass
    would: a list for a list field, and for ``given`` fields (sizes) the
    value as it was given ("512M"; memory_bytes() has the bytes)."""

    def __init__(self, check, given=False):
        self.check = check
        self.given = given
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if self.given:
            return obj._given[self.name]
        v = obj._cfg[self.name]
        return list(v) if isinstance(v, tuple) else v

    def __set__(self, obj, value):
        obj._cfg[self.name] = self.check(self.name, value)
        if self.given:
            obj._given[self.name] = value


# How each config field reaches the native builder: one small function per
# field (or group of fields), applied in this order by Sandbox._build.  A new
# keyword = a _Field on Sandbox, its __init__ parameter, and one step here.
_enc = os.fsencode


def _step_paths(b, c):
    for p in c["fs_readable"]:
        b = _lib.sandlock_sandbox_builder_fs_read(b, _enc(p))
    for p in c["fs_writable"]:
        b = _lib.sandlock_sandbox_builder_fs_write(b, _enc(p))
    for p in c["fs_denied"]:
        b = _lib.sandlock_sandbox_builder_fs_deny(b, _enc(p))
    if c["cwd"] is not None:
        b = _lib.sandlock_sandbox_builder_cwd(b, _enc(c["cwd"]))
    if c.get("name") is not None:
        b = _lib.sandlock_sandbox_builder_name(b, c["name"].encode("utf-8", "surrogateescape"))
    return b


def _step_env(b, c):
    if c["clean_env"]:
        b = _lib.sandlock_sandbox_builder_clean_env(b, True)
    for k, v in c["env"]:
        b = _lib.sandlock_sandbox_builder_env_var(b, _enc(k), _enc(v))
    return b


def _step_limits(b, c):
    # None = no limit (0 in the C ABI, whose default is 64 as here); confine()
    # has no supervisor to count processes and leaves it out.
    if not c.get("_confine"):
        b = _lib.sandlock_sandbox_builder_max_processes(b, c["max_processes"] or 0)
    if c["max_memory"] is not None:
        b = _lib.sandlock_sandbox_builder_max_memory(b, c["max_memory"])
    if c["timeout"] is not None:
        b = _lib.sandlock_sandbox_builder_timeout_ms(b, max(1, int(round(c["timeout"] * 1000))))
    if c["max_output"] is not None:
        b = _lib.sandlock_sandbox_builder_max_output(b, c["max_output"])
    return b


def _step_net(b, c):
    for p in c["net_allow"]:
        if isinstance(p, int):
            b = _lib.sandlock_sandbox_builder_net_allow_port(b, p)
        else:
            b = _lib.sandlock_sandbox_builder_net_allow(b, p.encode())
    for p in c["net_deny"]:
        b = _lib.sandlock_sandbox_builder_net_deny(b, p.encode())
    for p in c["net_allow_bind"]:
        b = _lib.sandlock_sandbox_builder_net_allow_bind(b, p.encode())
    for p in c["net_deny_bind"]:
        b = _lib.sandlock_sandbox_builder_net_deny_bind(b, p.encode())
    for p in c["net_allow_unix"]:
        b = _lib.sandlock_sandbox_builder_net_allow_unix(b, _enc(p))
    if c["net_unix_readable"]:
        b = _lib.sandlock_sandbox_builder_net_unix_readable(b, True)
    if c["port_remap"]:
        b = _lib.sandlock_sandbox_builder_port_remap(b, True)
    if c["net_host_interfaces"]:
        b = _lib.sandlock_sandbox_builder_net_host_interfaces(b, True)
    if c["tmp"]:
        b = _lib.sandlock_sandbox_builder_private_tmp(b, True)
    return b


def _step_determinism(b, c):
    if c["random_seed"] is not None:
        b = _lib.sandlock_sandbox_builder_random_seed(b, c["random_seed"])
    if c["time_start"] is not None:
        b = _lib.sandlock_sandbox_builder_time_start_ns(b, c["time_start"])
    return b


def _step_syscalls(b, c):
    for g in c["extra_allow_syscalls"]:
        b = _lib.sandlock_sandbox_builder_extra_allow_syscalls(b, g.encode())
    return b


_BUILDER_STEPS = [_step_paths, _step_env, _step_limits, _step_net, _step_determinism,
                  _step_syscalls, _knobs.step, _trace.step, _cow.step, _policy.step,
                  _chroot.step, _http.step]

_CACHE_SIZE = 4  # native policies kept per Sandbox (e.g. per timeout override)


class Sandbox:
    """A reusable sandbox configuration.

    Paths must exist (they are resolved when the native policy is built,
    which also reports configuration errors as PolicyError); under
    ``chroot`` the filesystem lists are guest paths, see below.
    ``max_memory`` is bytes (int) or a size string ("512M", "1.5G", see
    parse_memory_size); ``timeout`` is seconds.  ``max_output`` caps the
    captured stdout and stderr, each (bytes or a size string; default 64
    MiB, ``0`` for no cap): past it the rest is read and discarded, and
    ``Result.stdout_truncated`` / ``stderr_truncated`` count the bytes
    dropped.

    Network (docs: "Network policy"; everything not allowed is denied,
    a denied destination fails with EACCES): ``net_allow`` holds endpoint
    rules ``"[tcp://|udp://|icmp://]target[:ports]"`` (target ``*``, an IP,
    ``[IPv6]``, a CIDR or a hostname resolved at build; ports ``N,M`` or
    ``*``; a bare ``"443"`` means any address, TCP and UDP) or int TCP
    ports; ``net_deny`` (exclusive with ``net_allow``) lists IP/CIDR rules
    to deny while allowing the rest.  ``net_allow_bind`` / ``net_deny_bind``
    (exclusive) take ports, ``"lo-hi"`` ranges or ``"*"``.  Unix sockets
    by path are reachable inside ``fs_writable`` trees, at or below
    ``net_allow_unix`` paths, and inside ``fs_readable`` trees only with
    ``net_unix_readable=True``; never inside ``fs_denied``.  ``env`` holds variables to set on top of the
    inherited environment, or with ``clean_env=True`` on top of a minimal
    one: PATH, HOME, USER, TERM and LANG only, each with the value it has
    in the calling process where set there (PATH defaults to
    /usr/local/bin:/usr/bin:/bin).  ``name`` is the sandbox's name and
    virtual hostname: a non-empty str of at most 64 bytes without NUL,
    which uname() reports as the node name (and /proc/sys/kernel/hostname
    and /etc/hostname read as, when opened on behalf: see docs/security.md); None
    (the default) means ``sandbox-<pid>``, pid being the sandbox's init.

    ``random_seed`` (int) makes getrandom() return a reproducible stream;
    ``time_start`` (Unix seconds, datetime or ISO 8601 string, see
    parse_time_start) starts the wall clock at that instant (see docs/determinism.md,
    "Determinism"); with a seed, /dev/urandom and /dev/random read a
    seeded stream too.  ``deterministic_dirs=True`` lists directories
    sorted by name.  ``num_cpus`` (1..1024) is the CPU count the guest
    sees (/proc/cpuinfo, the /sys CPU lists, sched_getaffinity); with
    ``max_memory``, /proc/meminfo shows the budget.

    ``extra_allow_syscalls`` names syscall groups the sandbox denies by
    default to re-allow: ``"sysv_ipc"`` (SysV shared memory, message queues
    and semaphores and POSIX message queues, shared with the host's IPC
    namespace); an unknown group or a single syscall's name raises
    PolicyValueError.

    Limits and process settings (the reference's names and defaults; see
    docs: "Limits and process settings"): ``max_processes`` (default 64
    processes at once, threads not counted; None = no limit),
    ``max_memory`` (a budget for the whole sandbox where a cgroup can be
    made, else RLIMIT_AS per process), ``max_open_files``
    (RLIMIT_NOFILE, never above this process's own), ``max_cpu`` (percent
    of one core, 1..100: a cgroup quota, else SIGSTOP/SIGCONT throttling;
    see ``cpu_pct()``), ``cpu_cores`` (CPU affinity), ``no_coredump``,
    ``no_huge_pages``, ``no_randomize_memory``, and
    ``extra_deny_syscalls`` (syscall names or groups such as "sysv_ipc",
    denied with EPERM).  Landlock protections (``Protection``) are strict
    by default: a run on a kernel that lacks one fails, unless
    ``allow_degraded`` lists it; ``disable`` never enforces the listed
    ones.  ``active_protections()`` tells each one's status here.

    ``trace`` is a callable given one dict per file access the fs rules
    refuse, per call the supervisor refuses and per user-handler decision
    (the fields of the CLI's --trace lines); it runs on the supervisor's
    thread while the call waits, and its exceptions are logged, never
    raised into the run.

    Every config field can be reassigned after construction
    (``sb.fs_readable = [...]``): the new value is validated at once and
    applies from the next run (the native policy is rebuilt when the
    configuration changed since the last run, and reused otherwise).
    ``env`` changed in place takes effect too.  Runs may share an instance
    between threads; a run uses the configuration as it was when it
    started.

    Copy-on-write workdir (docs: "Copy-on-write workdir"): with
    ``workdir`` (a directory) every write of the command under it is
    staged in an upper layer (a private directory made in ``fs_storage``,
    default a temporary directory) and the real tree is not touched during
    the run; at the end the changes are committed (``on_exit``, default
    ``BranchAction.COMMIT``, after a successful run), thrown away
    (``on_error``, default ``BranchAction.ABORT``) or kept.  ``max_disk``
    (bytes or a size string) caps the bytes staged: writes past it fail
    with ENOSPC.  ``dry_run(cmd)`` runs and reports the changes without
    applying them.  ``workdir`` does not set the command's cwd.  Programs
    the command builds or copies there can be run, and it can cd into
    directories it made (docs: "Exec of a path the kernel cannot
    find").  A commit
    that finds a real file changed meanwhile leaves that change out and
    raises BranchConflictError (the staged layer is kept).

    ``tmp=True`` gives each run its own empty writable temporary
    directory, named by ``TMPDIR`` (not mounted over /tmp), removed with
    its contents when the run ends.

    ``port_remap=True`` gives the sandbox its own TCP port space: binds
    are performed by the supervisor, on another real port when the asked
    one is taken; the guest sees its own ports, and ``ports()`` returns
    the {virtual: real} map while it runs.  ``net_host_interfaces=True``
    shows the guest the host's network interfaces through route netlink
    (by default, where sandlock may make one, a loopback-only view).
    ``chroot`` (a directory) is
    the guest's ``/`` (docs: "Virtual chroot"), with ``fs_mount``
    ({virtual path: host dir}, read-write; read-only mounts only from the
    CLI's ``--fs-mount V:H:ro`` or C) showing host directories inside it;
    ``fs_readable`` / ``fs_writable`` / ``fs_denied`` are then guest paths
    (resolved in that view, so they never grant a host path outside the
    rootfs and mounts; one the view does not have is skipped; a writable
    one inside a read-only mount is refused);
    with a ``workdir`` too, that workdir must be the rootfs (or a directory
    in it) or one mount's host directory, and is seen through guest paths.
    ``policy_fn(event, ctx)`` decides exec,
    network, fork and exit events while the call waits and may tighten
    the policy at run time (docs: "Dynamic policy": SyscallEvent,
    PolicyContext, verdicts).  ``init_fn`` / ``work_fn`` are the template
    and clone callables of ``fork(n)`` (docs: "Fork and reduce").

    HTTP (docs/http.md): ``http_allow`` / ``http_deny`` rules ``"METHOD
    host/path"`` (``*`` globs, deny wins) send every TCP connect to
    ``http_ports`` (default 80; 443 too with ``http_ca`` + ``http_key`` or
    ``http_inject_ca``) through the supervisor's proxy, which judges each
    request and answers 403 naming the rule.  ``http_inject_ca`` names trust
    bundles that get a per-run CA appended as the guest reads them;
    ``http_ca_out`` writes that CA's certificate.  ``http_credentials``
    ({name: "env:VAR" | "file:PATH" | "fd:N"}) and ``http_auth`` rules
    (``"METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]"``) attach secrets
    the guest never sees; ``http_log`` gets one JSON line per request."""

    fs_readable = _Field(_path_list)
    fs_writable = _Field(_path_list)
    fs_denied = _Field(_path_list)
    cwd = _Field(_opt_path)
    env = _Field(_env)
    clean_env = _Field(_bool)
    max_processes = _Field(_max_processes)
    max_memory = _Field(_max_memory, given=True)
    net_allow = _Field(_specs)
    net_allow_bind = _Field(_bind_specs)
    net_deny = _Field(_deny_specs)
    net_deny_bind = _Field(_bind_specs)
    net_allow_unix = _Field(_path_list)
    net_unix_readable = _Field(_bool)
    port_remap = _Field(_bool)
    net_host_interfaces = _Field(_bool)
    tmp = _Field(_bool)
    timeout = _Field(_timeout)
    max_output = _Field(_max_output)
    name = _Field(_name)
    random_seed = _Field(_random_seed)
    time_start = _Field(_time_start)
    extra_allow_syscalls = _Field(_syscall_groups)
    max_open_files = _Field(_knobs.max_open_files)
    max_cpu = _Field(_knobs.max_cpu)
    cpu_cores = _Field(_knobs.cpu_cores)
    no_coredump = _Field(_knobs.flag)
    no_huge_pages = _Field(_knobs.flag)
    no_randomize_memory = _Field(_knobs.flag)
    num_cpus = _Field(_knobs.num_cpus)
    gpu_devices = _Field(_knobs.gpu_devices)
    deterministic_dirs = _Field(_knobs.flag)
    extra_deny_syscalls = _Field(_knobs.syscall_names)
    allow_degraded = _Field(_knobs.protections)
    disable = _Field(_knobs.protections)
    trace = _Field(_trace.check)
    workdir = _Field(_opt_path)
    fs_storage = _Field(_opt_path)
    on_exit = _Field(_cow.action)
    on_error = _Field(_cow.action)
    max_disk = _Field(_cow.max_disk, given=True)
    policy_fn = _Field(_policy.check)
    chroot = _Field(_opt_path)
    image = _Field(_opt_path)
    fs_mount = _Field(_chroot.mounts)
    http_allow = _Field(_http.rules)
    http_deny = _Field(_http.rules)
    http_ports = _Field(_http.ports)
    http_ca = _Field(_http.opt_path)
    http_key = _Field(_http.opt_path)
    http_inject_ca = _Field(_http.strs)
    http_ca_out = _Field(_http.opt_path)
    http_credentials = _Field(_http.credentials)
    http_auth = _Field(_http.checkers()["http_auth"])
    http_log = _Field(_http.opt_path)

    def __init__(
        self,
        *,
        fs_readable: Iterable = (),
        fs_writable: Iterable = (),
        fs_denied: Iterable = (),
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        env: Optional[Mapping[str, str]] = None,
        clean_env: bool = False,
        max_processes: Optional[int] = _knobs.DEFAULT_MAX_PROCESSES,
        max_memory: Optional[Union[int, str]] = None,
        net_allow: Iterable = (),
        net_allow_bind: Iterable = (),
        timeout: Optional[float] = None,
        name: Optional[str] = None,
        random_seed: Optional[int] = None,
        time_start: Optional[Union[int, float, str, datetime.datetime]] = None,
        extra_allow_syscalls: Iterable[str] = (),
        max_open_files: Optional[int] = None,
        max_cpu: Optional[int] = None,
        cpu_cores: Optional[Sequence[int]] = None,
        no_coredump: bool = False,
        no_huge_pages: bool = False,
        no_randomize_memory: bool = False,
        extra_deny_syscalls: Iterable[str] = (),
        allow_degraded: Iterable[Protection] = (),
        disable: Iterable[Protection] = (),
        net_deny: Iterable[str] = (),
        net_deny_bind: Iterable = (),
        net_allow_unix: Iterable = (),
        net_unix_readable: bool = False,
        port_remap: bool = False,
        net_host_interfaces: bool = False,
        tmp: bool = False,
        max_output: Optional[int] = None,
        trace: Optional[Callable[[dict], None]] = None,
        num_cpus: Optional[int] = None,
        deterministic_dirs: bool = False,
        init_fn: Optional[Callable[[], object]] = None,
        work_fn: Optional[Callable[[int], object]] = None,
        workdir: Optional[Union[str, "os.PathLike[str]"]] = None,
        fs_storage: Optional[Union[str, "os.PathLike[str]"]] = None,
        on_exit: Union[BranchAction, str] = BranchAction.COMMIT,
        on_error: Union[BranchAction, str] = BranchAction.ABORT,
        max_disk: Optional[Union[int, str]] = None,
        policy_fn: Optional[Callable] = None,
        chroot: Optional[Union[str, "os.PathLike[str]"]] = None,
        image: Optional[str] = None,
        fs_mount: Optional[Dict[str, str]] = None,
        gpu_devices: Optional[Sequence[int]] = None,
        http_allow: Iterable[str] = (),
        http_deny: Iterable[str] = (),
        http_ports: Iterable[int] = (),
        http_ca: Optional[str] = None,
        http_key: Optional[str] = None,
        http_inject_ca: Iterable[str] = (),
        http_ca_out: Optional[str] = None,
        http_credentials: Optional[Dict[str, str]] = None,
        http_auth: Iterable[str] = (),
        http_log: Optional[str] = None,
    ) -> None:
        self._cfg = {}
        self._given = {}
        self._lock = threading.Lock()
        self._natives = collections.OrderedDict()  # snapshot -> _NativeSandbox
        self.fs_readable = fs_readable
        self.fs_writable = fs_writable
        self.fs_denied = fs_denied
        self.cwd = cwd
        self.env = env
        self.clean_env = clean_env
        self.max_processes = max_processes
        self.max_memory = max_memory
        self.net_allow = net_allow
        self.net_allow_bind = net_allow_bind
        self.net_deny = net_deny
        self.net_deny_bind = net_deny_bind
        self.net_allow_unix = net_allow_unix
        self.net_unix_readable = net_unix_readable
        self.port_remap = port_remap
        self.net_host_interfaces = net_host_interfaces
        self.tmp = tmp
        self.timeout = timeout
        self.name = name
        self.random_seed = random_seed
        self.time_start = time_start
        self.extra_allow_syscalls = extra_allow_syscalls
        self.max_open_files = max_open_files
        self.max_cpu = max_cpu
        self.cpu_cores = cpu_cores
        self.no_coredump = no_coredump
        self.no_huge_pages = no_huge_pages
        self.no_randomize_memory = no_randomize_memory
        self.extra_deny_syscalls = extra_deny_syscalls
        self.allow_degraded = allow_degraded
        self.disable = disable
        self.max_output = max_output
        self.trace = trace
        self.num_cpus = num_cpus
        self.gpu_devices = gpu_devices
        self.deterministic_dirs = deterministic_dirs
        # Runtime kwargs of fork(), not configuration (never in a snapshot).
        self.init_fn = _callable("init_fn", init_fn)
        self.work_fn = _callable("work_fn", work_fn)
        self.workdir = workdir
        self.fs_storage = fs_storage
        self.on_exit = on_exit
        self.on_error = on_error
        self.max_disk = max_disk
        self.policy_fn = policy_fn
        self.chroot = chroot
        self.image = image
        self.fs_mount = fs_mount
        self.http_allow = http_allow
        self.http_deny = http_deny
        self.http_ports = http_ports
        self.http_ca = http_ca
        self.http_key = http_key
        self.http_inject_ca = http_inject_ca
        self.http_ca_out = http_ca_out
        self.http_credentials = http_credentials
        self.http_auth = http_auth
        self.http_log = http_log
        # Build once now so a bad configuration fails here, not at run().
        # Hostnames are resolved at run, as the reference does (a Sandbox
        # can be made offline): with one in net_allow, the check builds a
        # copy whose hostnames are a documentation address instead.
        if any(map(_names_a_host, self._cfg["net_allow"])):
            offline = {"net_allow": tuple(map(_offline_rule, self._cfg["net_allow"]))}
            _lib.sandlock_sandbox_free(Sandbox._build(self._snapshot(None, offline)))
        else:
            self._native_for(None)

    def __eq__(self, other):
        """Same configuration and runtime callables (as the reference's
        dataclass compares its fields)."""
        if not isinstance(other, Sandbox):
            return NotImplemented
        return self._comparable() == other._comparable()

    __hash__ = None  # mutable and compared by value: unhashable, like the reference's

    def _comparable(self):
        c = dict(self._snapshot(None))
        c["policy_fn"] = getattr(c["policy_fn"], "fn", None)
        c["max_memory"], c["max_disk"] = self.max_memory, self.max_disk
        return c, self.init_fn, self.work_fn

    def __repr__(self):
        return "Sandbox(fs_readable=%r, fs_writable=%r, timeout=%r)" % (
            list(self.fs_readable), list(self.fs_writable), self.timeout)

    def _snapshot(self, timeout, overrides=None):
        """The configuration a run uses, as a hashable tuple of (field,
        value) pairs (the cache key).  ``env`` is re-validated: it is the
        one field that can change in place."""
        c = dict(self._cfg)
        c["env"] = tuple(sorted(_env("env", c["env"]).items()))
        c["fs_mount"] = tuple(sorted(_chroot.mounts("fs_mount", c["fs_mount"]).items()))
        if timeout is not None:
            c["timeout"] = timeout
        c.update(overrides or {})
        return tuple(sorted(c.items(), key=lambda kv: kv[0]))

    @staticmethod
    def _build(snap):
        cfg = dict(snap)
        b = _lib.sandlock_sandbox_builder_new()
        if not b:
            raise MemoryError("sandlock_sandbox_builder_new failed")
        for apply in _BUILDER_STEPS:
            b = apply(b, cfg)
        err, msg = _native.error_out()
        sb = _lib.sandlock_sandbox_build(b, ctypes.byref(err), ctypes.byref(msg))
        if not sb:
            _raise_from(err, msg, "sandlock_sandbox_build", building=True)
        return sb

    def _native_for(self, timeout, overrides=None):
        """The native sandbox for the current configuration (and this
        timeout override): cached, rebuilt only when the snapshot changed.
        The caller keeps the returned object alive for its run; an entry
        evicted meanwhile is freed when the last run using it drops it."""
        key = self._snapshot(_timeout("timeout", timeout), overrides)
        with self._lock:
            nsb = self._natives.get(key)
            if nsb is not None:
                self._natives.move_to_end(key)
                return nsb
        nsb = _NativeSandbox(self._build(key), key)  # outside the lock: resolves paths
        with self._lock:
            self._natives[key] = nsb
            while len(self._natives) > _CACHE_SIZE:
                self._natives.popitem(last=False)
        return nsb

    def _with_trace(self, handlers):
        """handlers plus, with trace=, the handler that reports refused
        file accesses (last: user handlers decide first)."""
        t = self._cfg.get("trace")
        if t is None or isinstance(handlers, (str, bytes)) or \
                not isinstance(handlers, _IterableABC):
            return handlers  # _Registrations reports a bad list
        return list(handlers) + _trace.handlers(t, self._cfg)

    def active_protections(self):
        """{Protection: ProtectionStatus} of the current configuration on
        this kernel (UNAVAILABLE: strict and missing, so runs fail)."""
        return _knobs.protection_status(self._native_for(None).ptr)

    def run(self, cmd: Sequence[str], timeout: Optional[float] = None) -> Result:
        """Run cmd (a list of str; a bare name is looked up on the sandbox's
        PATH) in the sandbox and wait for it.  A command that is not found
        gives a failed Result with exit code 127 and the reason on stderr."""
        if self._cfg.get("trace") is not None:
            return self.run_with_handlers(cmd, [], timeout=timeout)  # its file-access handler
        # With image=, an empty cmd runs the image's own command.
        argv = _argv(cmd) if (cmd or self.image is None) else ()
        nsb = self._native_for(timeout)
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        r = _lib.sandlock_run_err(nsb.ptr, arr, len(argv), ctypes.byref(err), ctypes.byref(msg))
        if not r:
            return _run_failure(err, msg, "sandlock_run")
        return _take_result(r)

    def dry_run(self, cmd: Sequence[str], timeout: Optional[float] = None) -> DryRunResult:
        """Run cmd with the workdir's writes staged, then throw them away
        (on_exit and on_error are ABORT for this run): ``changes`` lists
        what the run would have changed (A/M/D, paths relative to
        workdir).  The real workdir is left as it was.  PolicyValueError
        if the sandbox has no workdir."""
        if self.workdir is None:
            raise PolicyValueError("dry_run needs a workdir (Sandbox(workdir=...))")
        argv = _argv(cmd)
        abort = {"on_exit": BranchAction.ABORT, "on_error": BranchAction.ABORT}
        nsb = self._native_for(timeout, abort)
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        r = _lib.sandlock_run_err(nsb.ptr, arr, len(argv), ctypes.byref(err), ctypes.byref(msg))
        if not r:
            res = _run_failure(err, msg, "sandlock_run")
            return DryRunResult(**dict(dataclasses.asdict(res), changes=[]))
        return _take_result(r, dry_run=True)

    def run_with_handlers(
        self,
        cmd: Sequence[str],
        handlers: Iterable[Tuple[object, Handler]],
        timeout: Optional[float] = None,
    ) -> Result:
        """Run cmd with user handlers: ``handlers`` is a list of
        ``(syscall, Handler)`` pairs, where syscall is a name ("openat") or
        a number on the native arch; handlers are called in registration
        order after sandlock's built-in handlers for that syscall.  An
        unknown syscall is a PolicyValueError (a ValueError) naming it,
        raised before anything starts.  The Sandbox holds strong references
        to the handlers until the run completes.

        The timeout bounds the whole call: once the sandbox is gone, a
        handler still running (sync or async) gets 200 ms, then the call
        returns without it.  Its thread is left to finish on its own; what
        it returns then is dropped (docs: "The run always ends, on
        time")."""
        argv = _argv(cmd)
        hs = _Registrations(self._with_trace(handlers))
        nsb = self._native_for(timeout)
        abandoned = True  # until the C side says otherwise (a failed run cannot tell)
        try:
            hs.make()
            arr = (ctypes.c_char_p * len(argv))(*argv)
            err, msg = _native.error_out()
            # From here on the C side owns every handler, on every path.
            r = _lib.sandlock_run_with_handlers_err(
                nsb.ptr, arr, len(argv), hs.regs, hs.n, ctypes.byref(err), ctypes.byref(msg)
            )
            if not r:
                return _run_failure(err, msg, "sandlock_run_with_handlers_err")
            abandoned = bool(_lib.sandlock_result_handlers_abandoned(r))
            return _take_result(r)
        finally:
            hs.close(abandoned)  # the run is over (its deferred workers too)

    # ---- a run as an object (python/sandlock/_process.py) ----

    def popen(self, cmd, stdin=None, stdout=None, stderr=None, handlers=(),
              timeout=None, pass_fds=()):
        """Start cmd and return a Process at once; see sandlock.Process.

        stdin/stdout/stderr: a StdioMode (PIPE: a file object on the
        Process; INHERIT; DEVNULL; CAPTURE: collected into the Result of
        wait()), an int fd or a file object with fileno().  Defaults:
        stdin DEVNULL, stdout PIPE, stderr CAPTURE.  ``handlers`` as for
        run_with_handlers; ``pass_fds`` are fds (> 2) the command keeps."""
        return _process.popen(self, cmd, stdin, stdout, stderr, handlers, timeout, pass_fds)

    def spawn(self, cmd, timeout=None) -> None:
        """Start cmd without waiting (output is captured for wait()).  One
        process at a time per Sandbox: RuntimeError if one is running."""
        _process.attach(self, cmd, timeout, create=False)

    def create(self, cmd, timeout=None) -> None:
        """Launch cmd confined but parked before execve; start() releases
        it.  ``pid`` is known at once.  RuntimeError if one is running."""
        _process.attach(self, cmd, timeout, create=True)

    def start(self) -> None:
        """Release the create()d command.  RuntimeError if there is none."""
        _process.current(self, "start").start()

    def wait(self, timeout=None) -> Result:
        """Wait for the spawn()ed command and return its Result (with its
        captured output); the Sandbox is then free for the next one.
        timeout (seconds): the sandbox is killed when it expires and the
        Result is a failed one (reason TIMEOUT)."""
        try:
            res = _process.current(self, "wait").wait(timeout)
        except BranchError:  # the run is over; only its commit failed
            _process.detach(self)
            raise
        _process.detach(self)
        return res

    @property
    def pid(self) -> Optional[int]:
        """The pid of the command running now (spawn/create or popen),
        else None."""
        p = _process.running(self)
        return p.pid if p is not None else None

    def ports(self) -> dict:
        """With ``port_remap=True``: ``{virtual port: real port}`` for the ports
        the running command bound on another real port than it asked for
        (a port not listed is its own real port).  {} when nothing runs."""
        p = getattr(self, "_proc", None)
        return p.ports() if p is not None else {}

    @property
    def is_running(self) -> bool:
        """True while a spawn()ed / create()d / popen()ed command is alive."""
        return _process.running(self) is not None

    def pause(self) -> None:
        """Stop every process of the sandbox: its cgroup v2 group frozen where
        it has one, else SIGSTOP to the whole tree."""
        _process.current(self, "pause").pause()

    def resume(self) -> None:
        """Continue every process of the sandbox after pause()."""
        _process.current(self, "resume").resume()

    def usage(self) -> "Usage":
        """Live use of the running sandbox (spawn/create or popen, every
        process of it): ``Usage(cpu_pct, memory_bytes)``, CPU in percent of
        one core since the previous reading (first: since the start) and
        memory in bytes now (its cgroup's charge with max_memory, else the
        sum of its processes' RSS).  RuntimeError if nothing runs."""
        p = _process.running(self)
        if p is None:
            raise RuntimeError("cannot read the usage: the sandbox is not running")
        return p.usage()

    def memory_bytes(self) -> Optional[int]:
        """max_memory in bytes, or None when unset (the reference's config
        helper; live use is usage())."""
        return self._cfg["max_memory"]

    def cpu_pct(self) -> Optional[int]:
        """max_cpu as a percentage of one core, or None when unset (the
        reference's config helper; live use is usage())."""
        return self.max_cpu

    def kill(self) -> None:
        """End the whole sandbox at once; wait() then reports KILLED.
        RuntimeError if it is not running."""
        p = _process.current(self, "kill")
        if not p.is_running:
            raise RuntimeError("cannot kill: the sandbox is not running")
        p.kill()

    def run_interactive(self, cmd, timeout=None) -> int:
        """Run cmd with this process's stdin, stdout and stderr (a terminal
        is handed over for the run) and return its exit code."""
        inh = StdioMode.INHERIT
        with self.popen(cmd, stdin=inh, stdout=inh, stderr=inh, timeout=timeout) as p:
            return p.wait().exit_code

    def cmd(self, args) -> "Stage":
        """A lazy Stage of a pipeline: cmd runs in this sandbox when the
        pipeline runs (see sandlock.Pipeline)."""
        return Stage(self, args)

    def fork(self, n: int) -> "ForkResult":
        """COW fork mode (docs: "Fork and reduce"): a template process
        confines itself with this sandbox's policy, runs init_fn once, then
        forks n copy-on-write clones; clone i runs work_fn(i) with
        CLONE_ID=i in its environment and its stdout on a pipe of its own.
        Returns at once with the clones running: a ForkResult (``pids``,
        ``wait()`` -> one Result per clone, ``kill()``; a context manager).
        ``timeout`` covers init_fn and the clones.  Settings that need a
        supervisor are refused as by confine(); clones are not counted in
        max_processes.  ConfinementError / ForkError (init_fn raised) /
        TimeoutError if the template fails."""
        from . import _fork

        return _fork.start(self, n, self.init_fn, self.work_fn)

    def reduce(self, cmd: Sequence[str], clones: "ForkResult",
               timeout: Optional[float] = None) -> Result:
        """Run cmd in this sandbox with the stdout of every clone of
        ``clones`` (a ForkResult, waited for here), in clone-id order, on
        its stdin; return cmd's Result."""
        from . import _fork

        return _fork.reduce(self, cmd, clones, timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Ends whatever this Sandbox still runs (spawn/create)."""
        _process.detach(self, kill=True)
        return False


class _Registrations:
    """The C handlers of one run, made from (syscall, Handler) pairs.

    make() creates them (once a handler list is valid); from the moment
    they are passed to sandlock_run_with_handlers / sandlock_spawn the C
    side owns them.  close(), once the run is over (its threads joined),
    drops the strong references the registry holds."""

    def __init__(self, handlers):
        if isinstance(handlers, (str, bytes)) or not isinstance(handlers, _IterableABC):
            raise PolicyTypeError("handlers must be a list of (syscall, Handler) pairs")
        self.pairs = []
        for item in handlers:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise PolicyTypeError("each handler entry must be a (syscall, Handler) pair, "
                                      "got %r" % (item,))
            sc, h = item
            name = _syscall_name(sc)
            self.pairs.append((name.encode(), h, _validate_handler(h)))
        self._add_equivalents()
        self.run = _RunState()
        self.made = {}  # id(handler) -> (c ptr, key); one C handler per instance
        self.regs = None
        self.n = len(self.pairs)

    def _add_equivalents(self):
        """A handler with ``_also_on`` (the path presets) is registered on
        the syscalls it names for each of its own, after it, unless the
        same handler already is: open(2) gets the preset given for openat."""
        have = {(name, id(h)) for name, h, _policy in self.pairs}
        for name, h, policy in list(self.pairs):
            for other in getattr(h, "_also_on", lambda _n: ())(name.decode()):
                if (other.encode(), id(h)) not in have:
                    have.add((other.encode(), id(h)))
                    self.pairs.append((other.encode(), h, policy))

    def make(self):
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

    def close(self, abandoned=True):
        """After the run: drop the strong references to the handlers.
        abandoned (the default when the run's end is unknown): a handler
        thread may still be running, so its thread states are kept."""
        made, self.made = self.made, {}
        for _ptr, key in made.values():
            _unregister(key)
        self.run.close(abandoned)


class _NativeSandbox:
    """Owns a sandlock_sandbox_t; freed on close() or garbage collection."""

    def __init__(self, ptr, snap=()):
        self.ptr = ptr
        self._lock = threading.Lock()
        # What the native policy points into: the C functions of the trace=
        # and policy_fn= callbacks must outlive every run of it, cached or not.
        cfg = dict(snap)
        self._keep = (cfg.get("trace"), cfg.get("policy_fn"))

    def close(self):
        with self._lock:
            p, self.ptr = self.ptr, None
        if p:
            _lib.sandlock_sandbox_free(p)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def confine(sandbox: "Sandbox") -> None:
    """Confine the calling process itself with sandbox's Landlock rules
    (fs_readable, fs_writable, fs_denied, net_allow, net_allow_bind, the
    protections) and its seccomp blocklist (with extra_allow_syscalls and
    extra_deny_syscalls), in place and irreversibly: no fork, no
    supervisor.  no_coredump, no_huge_pages, max_open_files and cpu_cores
    apply to this process as well.  Settings that need a supervisor or a
    fresh child (cwd, env, clean_env, timeout, max_memory, max_cpu, a
    max_processes other than the default, no_randomize_memory) raise
    PolicyValueError rather than being dropped; a process with more than
    one thread raises ConfinementError (Landlock would confine only the
    calling thread), as does any other failure."""
    if not isinstance(sandbox, Sandbox):
        raise PolicyTypeError("confine() takes a Sandbox, not %s" % type(sandbox).__name__)
    cfg = dict(sandbox._snapshot(None))
    refused = _knobs.confine_refusal(cfg, Sandbox._build)
    if refused:
        raise PolicyValueError("confine: %s cannot be applied to the calling process "
                               "(it needs a supervisor or a fresh child)" % refused)
    cfg["_confine"] = True
    failed = _knobs.confine_native(Sandbox._build(tuple(sorted(cfg.items()))))
    if failed:
        text = _native.take_string(failed[1].value)
        raise ConfinementError(failed[0].value or 7,
                               text.decode(errors="replace") if text else "confine failed")


def check() -> str:
    """The `sandlock check` report of this host, as text."""
    return _knobs.check_report()
from . import _process  # noqa: E402  (needs Result, _Registrations above)
from ._process import Fd, Process, StdioMode, Usage  # noqa: E402
from ._pipeline import Gather, GatherPipeline, NamedStage, Pipeline, Stage  # noqa: E402
from ._inputs import inputs  # noqa: E402
from ._fork import ForkResult  # noqa: E402


def landlock_abi_version() -> int:
    """Landlock ABI of the running kernel, or -1 when unavailable."""
    return int(_lib.sandlock_landlock_abi_version())


# TOML profiles (sandlock.profile imports Sandbox lazily: no import cycle).
from .profile import list_profiles, load_profile  # noqa: E402

# The reference's public module path for the Sandbox class and its helpers.
from . import sandbox  # noqa: E402,F401
