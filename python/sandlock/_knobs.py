"""Sandbox knobs beyond paths and ports: resource limits, process settings,
extra syscall denials and Landlock protections (the reference's names and
defaults), plus what ``confine`` and the host check need.  _fields.py's
table declares the fields (and makes their builder calls); their checks
live here."""

import ctypes
import enum
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _native
from .exceptions import PolicyTypeError, PolicyValueError

_lib = _native.lib

DEFAULT_MAX_PROCESSES = 64


class Protection(enum.IntEnum):
    """A Landlock protection (values are the C ABI's SANDLOCK_PROTECTION_*).
    Each needs a minimum Landlock ABI: see ``min_abi``."""

    FS_REFER = 0
    FS_TRUNCATE = 1
    NET_TCP = 2
    FS_IOCTL_DEV = 3
    SIGNAL_SCOPE = 4
    ABSTRACT_UNIX_SOCKET_SCOPE = 5

    @property
    def min_abi(self) -> int:
        return int(_lib.sandlock_protection_min_abi(int(self)))


class ProtectionStatus(str, enum.Enum):
    """A protection's resolved status on this kernel (active_protections)."""

    ACTIVE = "active"
    DEGRADED = "degraded"        # allow_degraded, and the kernel lacks it
    DISABLED = "disabled"
    UNAVAILABLE = "unavailable"  # strict, and the kernel lacks it: runs fail


_STATUS = [ProtectionStatus.ACTIVE, ProtectionStatus.DEGRADED, ProtectionStatus.DISABLED,
           ProtectionStatus.UNAVAILABLE]


def _bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise PolicyTypeError("%s must be a bool, not %s" % (name, type(v).__name__))
    return v


def _int_in(name: str, v: Any, lo: int, hi: int) -> Optional[int]:
    return None if v is None else _int_range(name, v, lo, hi)


def _int_range(name: str, v: Any, lo: int, hi: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise PolicyTypeError("%s must be an int, not %s" % (name, type(v).__name__))
    if not lo <= v <= hi:
        raise PolicyValueError("%s must be in %d..%d, got %d" % (name, lo, hi, v))
    return int(v)


def _seq(name: str, v: Any) -> List[Any]:
    if isinstance(v, (str, bytes)):
        raise PolicyTypeError("%s must be a list, not a single %s" % (name, type(v).__name__))
    try:
        return list(v)
    except TypeError:
        raise PolicyTypeError("%s must be a list, not %s" % (name, type(v).__name__)) from None


def _cores(v: Any) -> Optional[Tuple[int, ...]]:
    if v is None:
        return None
    cores = tuple(_int_range("cpu_cores", c, 0, 1023) for c in _seq("cpu_cores", v))
    if not cores:
        raise PolicyValueError("cpu_cores must name at least one core (None = no pinning)")
    return tuple(sorted(set(cores)))


def _names(name: str, v: Any) -> Tuple[str, ...]:
    out: List[str] = []
    for s in _seq(name, v):
        if not isinstance(s, str):
            raise PolicyTypeError("%s: expected syscall or group names (str), got %r" % (name, s))
        if not s or "\0" in s:
            raise PolicyValueError("%s: invalid name %r" % (name, s))
        out.append(s)
    return tuple(out)


def _protections(name: str, v: Any) -> Tuple[Protection, ...]:
    out: List[Protection] = []
    for p in _seq(name, v):
        if isinstance(p, bool):
            raise PolicyTypeError("%s: expected Protection values, got %r" % (name, p))
        try:
            out.append(Protection[p.upper()] if isinstance(p, str) else Protection(p))
        except (KeyError, ValueError):
            raise PolicyValueError("%s: unknown protection %r" % (name, p)) from None
    return tuple(out)


# ---- field validators: (field name, value) -> normalized value ----

def max_open_files(name: str, v: Any) -> Optional[int]:
    return _int_in(name, v, 1, 0xFFFFFFFF)


def max_cpu(name: str, v: Any) -> Optional[int]:
    return _int_in(name, v, 1, 100)


def num_cpus(name: str, v: Any) -> Optional[int]:
    return _int_in(name, v, 1, 1024)


def cpu_cores(name: str, v: Any) -> Optional[Tuple[int, ...]]:
    return _cores(v)


def gpu_devices(name: str, v: Any) -> Optional[Tuple[int, ...]]:
    """None (no GPU), [] (every GPU) or GPU indices 0..255 (at most 64)."""
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise PolicyTypeError("%s must be a list of GPU indices or None, not %s"
                              % (name, type(v).__name__))
    out = tuple(_int_range(name, x, 0, 255) for x in v)
    if len(out) > 64:
        raise PolicyValueError("%s: at most 64 GPU indices" % name)
    return out


def flag(name: str, v: Any) -> bool:
    return _bool(name, v)


def syscall_names(name: str, v: Any) -> Tuple[str, ...]:
    return _names(name, v)


def protections(name: str, v: Any) -> Tuple[Protection, ...]:
    return _protections(name, v)


def protection_status(native_ptr: _native.Ptr) -> Dict[Protection, ProtectionStatus]:
    return {p: _STATUS[_lib.sandlock_sandbox_protection_status(native_ptr, int(p))]
            for p in Protection}


def min_landlock_abi() -> int:
    """The Landlock ABI sandlock's strict default needs (every Protection): 6."""
    return int(_lib.sandlock_min_landlock_abi())


def check_report() -> str:
    """The `sandlock check` report of this host, as text."""
    p = _lib.sandlock_check_report()
    if not p:
        raise MemoryError("sandlock_check_report failed")
    return (_native.take_string(p) or b"").decode(errors="replace")


def confine_refusal(cfg: _native.Cfg,
                    build: Callable[[Tuple[Tuple[str, Any], ...]], _native.Ptr]) -> Optional[str]:
    """The first setting of config snapshot dict cfg that confine() refuses.
    The library answers from its builtin table (so no supervisor-only
    setting can be forgotten here); max_processes is asked here because a
    confine build (cfg's _confine) leaves it out.  build(snapshot) makes
    the native sandbox."""
    if cfg.get("max_processes", DEFAULT_MAX_PROCESSES) != DEFAULT_MAX_PROCESSES:
        return "max_processes (needs the supervisor)"
    ptr = build(tuple(sorted(dict(cfg, _confine=True).items())))
    try:
        why = _lib.sandlock_confine_refusal(ptr)
        return str(why.decode()) if why else None
    finally:
        _lib.sandlock_sandbox_free(ptr)


def confine_native(ptr: _native.Ptr) -> Optional[Tuple[ctypes.c_int, ctypes.c_void_p]]:
    """Confine this process with native sandbox ptr (freed here): None, or
    the (err, msg) out-parameters of the failure."""
    try:
        err, msg = _native.error_out()
        if _lib.sandlock_confine_err(ptr, ctypes.byref(err), ctypes.byref(msg)) < 0:
            return err, msg
        return None
    finally:
        _lib.sandlock_sandbox_free(ptr)
