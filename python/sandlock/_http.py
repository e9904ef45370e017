"""The HTTP policy from Python: the ``http_*`` fields of Sandbox (checks and
their builder calls are rows of _fields.py's table).  The proxy itself is the C library's (src/proxy*.c,
docs/http.md): with an ``http_allow`` or ``http_deny`` rule every TCP
connect to an intercepted port (``http_ports``, default 80; 443 too with
``http_ca``/``http_key`` or ``http_inject_ca``) goes through it, and each
request is judged by method, host and path."""

import ctypes
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _native
from .exceptions import PolicyTypeError, PolicyValueError

_lib = _native.lib



def _strs(name: str, value: Any, what: str) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes)):
        raise PolicyTypeError("%s must be a list of %s, not a single %s"
                              % (name, what, type(value).__name__))
    try:
        items = list(value)
    except TypeError:
        raise PolicyTypeError("%s must be a list of %s, not %s"
                              % (name, what, type(value).__name__)) from None
    for x in items:
        if not isinstance(x, str):
            raise PolicyTypeError("%s: each entry must be a str, got %r" % (name, x))
    return tuple(items)


def rules(name: str, value: Any) -> Tuple[str, ...]:
    """http_allow / http_deny: "METHOD host/path" rules, checked now."""
    out = _strs(name, value, "rules")
    for r in out:
        why = _lib.sandlock_http_rule_error(r.encode())
        if why:
            text = ctypes.string_at(why).decode(errors="replace")
            _lib.sandlock_string_free(why)
            raise PolicyValueError("%s %r: %s" % (name, r, text))
    return out


def ports(name: str, value: Any) -> Tuple[int, ...]:
    if isinstance(value, (str, bytes, int)):
        raise PolicyTypeError("%s must be a list of ports" % name)
    out: List[int] = []
    for p in value:
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
            raise PolicyValueError("%s: %r is not a TCP port (1-65535)" % (name, p))
        out.append(p)
    return tuple(out)


def strs(name: str, value: Any) -> Tuple[str, ...]:
    if isinstance(value, (str, bytes, os.PathLike)):
        raise PolicyTypeError("%s must be a list of paths, not a single path" % name)
    return tuple(os.fspath(x) for x in value)


def opt_path(name: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise PolicyTypeError("%s must be a path, not %s" % (name, type(value).__name__))
    return os.fspath(value)


def credentials(name: str, value: Any) -> Tuple[Tuple[str, str], ...]:
    """{NAME: "env:VAR" | "file:PATH" | "fd:N"}; the secret is read by the
    C library when the policy is built and never enters the sandbox."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise PolicyTypeError("%s must be a dict {name: source}" % name)
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str) or "=" in k:
            raise PolicyTypeError("%s: expected {name: 'env:VAR'|'file:PATH'|'fd:N'}" % name)
    return tuple(sorted(value.items()))


def auth_rules(name: str, value: Any) -> Tuple[str, ...]:
    """http_auth: "METHOD HOST/PATH AUTHSPEC NAME [mode]" rules (the build checks them)."""
    return _strs(name, value, "rules")
