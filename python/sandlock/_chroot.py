"""The virtual chroot from Python: the ``chroot``, ``fs_mount`` and
``fs_mount_ro`` fields of Sandbox (their checks; _fields.py's table makes the builder calls).  The view itself is the C
library's (src/builtins/chroot.c, src/builtins/chroot.c)."""

import os
from typing import Any, Dict

from . import _native
from .exceptions import PolicyTypeError, PolicyValueError

_lib = _native.lib


def mounts(name: str, value: Any) -> Dict[str, str]:
    """{virtual path: host directory} (fs_mount read-write, fs_mount_ro
    read-only: the reference's mapping has no room for a mode, so the
    read-only ones are a mapping of their own, as the CLI's
    ``--fs-mount V:H:ro``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PolicyTypeError("%s must be a mapping {virtual: host}, not %s"
                              % (name, type(value).__name__))
    out: Dict[str, str] = {}
    for virt, host in value.items():
        if not isinstance(virt, str) or not isinstance(host, (str, os.PathLike)):
            raise PolicyTypeError("%s: %r: %r: paths must be strings" % (name, virt, host))
        host = os.fspath(host)
        if host.endswith(":ro") or host.endswith(":rw"):
            raise PolicyValueError("%s %r: a ':ro'/':rw' suffix is not supported in the "
                                   "mapping (a read-only mount goes in fs_mount_ro)"
                                   % (name, virt))
        if not virt.startswith("/"):
            raise PolicyValueError("%s %r: the virtual path must be absolute" % (name, virt))
        out[virt] = host
    return out


def check_disjoint(rw: Dict[str, str], ro: Dict[str, str]) -> None:
    """One guest path is one mount: read-write or read-only, not both."""
    both = sorted(set(rw) & set(ro))
    if both:
        raise PolicyValueError("%r is in both fs_mount and fs_mount_ro: mount it once "
                               "(read-only or read-write)" % (both[0],))
