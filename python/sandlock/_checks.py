"""The checks of Sandbox's configuration values: each takes the field's
name (for the message) and the value given, and returns it normalized or
raises PolicyError naming the field (PolicyTypeError / PolicyValueError).
Also the public parsers (parse_ports, parse_memory_size, parse_time_start)
and the checks of a run's command and of a handler's syscall."""

import ctypes
import datetime
import fractions
import os
import re
from collections.abc import Mapping as _MappingABC
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from . import _native
from .exceptions import ERR_SYSCALL, PolicyError, PolicyTypeError, PolicyValueError

_lib = _native.lib


def path_list(name: str, value: Any) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes, os.PathLike)):
        raise PolicyTypeError("%s must be a list of paths, not a single %s"
                              % (name, type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise PolicyTypeError("%s must be a list of paths, not %s"
                              % (name, type(value).__name__)) from None
    return tuple(_path(name, p) for p in items)


def _path(name: str, p: Any) -> str:
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise PolicyTypeError("%s: expected a path (str), got %s" % (name, type(p).__name__))
    s = os.fsdecode(os.fspath(p))
    if not s:
        raise PolicyValueError("%s: empty path" % name)
    if "\0" in s:
        raise PolicyValueError("%s: path contains a NUL byte" % name)
    return s


def opt_path(name: str, p: Any) -> Optional[str]:
    return None if p is None else _path(name, p)


def _items(name: str, value: Any, what: str) -> List[Any]:
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


def _ports(name: str, value: Any) -> Tuple[int, ...]:
    items = _items(name, value, "ports")
    out = []
    for p in items:
        if not isinstance(p, int) or isinstance(p, bool):
            raise PolicyTypeError("%s: port must be an int, got %r" % (name, p))
        if not 1 <= p <= 65535:
            raise PolicyValueError("%s: port %d out of range 1..65535" % (name, p))
        out.append(int(p))
    return tuple(out)


def specs(name: str, value: Any, deny: bool = False) -> Tuple[Union[int, str], ...]:
    """Endpoint rules: str specs (checked now, naming the rule) or int ports."""
    items = _items(name, value, "rules")
    out: List[Union[int, str]] = []
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


def _rule_host(rule: object) -> Optional[str]:
    """The target of an endpoint rule (no scheme, no ports), or None."""
    if not isinstance(rule, str):
        return None
    t = _SCHEME_RE.sub("", rule)
    if t.startswith("["):
        return None  # an IPv6 literal
    return t.split(":", 1)[0].split("/", 1)[0]


def names_a_host(rule: object) -> bool:
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


def offline_rule(rule: Any) -> Any:
    """rule with a hostname target replaced by a documentation address
    (RFC 5737): the construction-time check must not need DNS."""
    if not names_a_host(rule):
        return rule
    h = _rule_host(rule) or ""
    scheme = _SCHEME_RE.match(rule)
    i = rule.index(h, len(scheme.group(0)) if scheme else 0)
    return rule[:i] + "192.0.2.1" + rule[i + len(h):]


def deny_specs(name: str, value: Any) -> Tuple[Union[int, str], ...]:
    return specs(name, value, True)


_PORTSPEC_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


def bind_specs(name: str, value: Any) -> Tuple[str, ...]:
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


def parse_ports(ports: Any, _what: str = "parse_ports") -> List[int]:
    """The ports of a list of ints, "N", "lo-hi" strings or comma lists of
    those ("8080,9000-9005", the CLI's grammar), each once, sorted (as the
    reference): ``parse_ports([80, "443", "8000-8005"])`` is
    ``[80, 443, 8000, 8001, 8002, 8003, 8004, 8005]``."""
    if isinstance(ports, (str, bytes, int)):
        raise PolicyTypeError("%s: expected a list of ports" % _what)
    out: Set[int] = set()
    for p in ports:
        if isinstance(p, bool) or not isinstance(p, (int, str)):
            raise PolicyTypeError("%s: port must be an int or a str, got %r" % (_what, p))
        parts: Sequence[Union[int, str]] = [p]
        if isinstance(p, str):
            parts = p.split(",")
        for part in parts:
            out.update(_port_range(_what, part))
    return sorted(out)


def _port_range(what: str, part: Union[int, str]) -> range:
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


def env(name: str, env: Any) -> Dict[str, str]:
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


def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise PolicyTypeError("%s must be a bool, not %s" % (name, type(value).__name__))
    return value


def max_processes(name: str, value: Any) -> Optional[int]:
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


def max_memory(name: str, value: Any) -> Optional[int]:
    return None if value is None else parse_memory_size(value)


def max_output(name: str, value: Any) -> Optional[int]:
    """None (the library's default, 64 MiB), 0 (no cap), or bytes / a size string."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return value
    try:
        return parse_memory_size(value)
    except PolicyError as e:
        raise type(e)("%s: %s" % (name, e.message)) from None


def timeout(name: str, value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PolicyTypeError("%s must be a number of seconds, not %s" % (name, type(value).__name__))
    if not value > 0 or value != value or value == float("inf"):
        raise PolicyValueError("%s must be a positive finite number of seconds, got %r"
                               % (name, value))
    return float(value)


def random_seed(name: str, value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyTypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if not 0 <= value < 1 << 64:
        raise PolicyValueError("%s must be in 0..2**64-1, got %d" % (name, value))
    return int(value)


def syscall_groups(name: str, value: Any) -> Tuple[str, ...]:
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


def parse_time_start(value: Union[int, float, fractions.Fraction, str,
                                   datetime.datetime]) -> int:
    """A time_start value as Unix nanoseconds: a number of seconds since the
    epoch (int, float or Fraction: a profile's nanoseconds, exact), a datetime (naive = UTC), or an RFC 3339 / ISO 8601
    string such as "2000-01-01T00:00:00Z" or "2026-03-01 12:00:00+01:00"."""
    if isinstance(value, bool):
        raise PolicyTypeError("time_start must be a number, datetime or str, not bool")
    if isinstance(value, (int, float, fractions.Fraction)):
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


def time_start(name: str, value: Any) -> Optional[int]:
    return None if value is None else parse_time_start(value)


_NAME_MAX = 64  # bytes, like a hostname (HOST_NAME_MAX)


def sandbox_name(name: str, value: Any) -> Optional[str]:
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


def callable_check(name: str, fn: Any) -> Any:
    if fn is not None and not callable(fn):
        raise PolicyTypeError("%s must be callable, not %s" % (name, type(fn).__name__))
    return fn


def argv(cmd: Any) -> Tuple[bytes, ...]:
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


def syscall_name(entry: object) -> str:
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
