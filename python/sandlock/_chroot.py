"""The virtual chroot from Python: the ``chroot`` and ``fs_mount`` fields
of Sandbox (their checks; _fields.py's table makes the builder calls).  The view itself is the C
library's (src/builtins/chroot.c, src/builtins/chroot.c)."""

import os
from typing import Any, Dict

from . import _native
from .exceptions import PolicyTypeError, PolicyValueError

_lib = _native.lib


def mounts(name: str, value: Any) -> Dict[str, str]:
    """{virtual path: host directory}; a read-only mount cannot be said
    here (the reference's mapping has no room for it): use the CLI's
    ``--fs-mount V:H:ro`` or the C ABI's sandlock_sandbox_builder_fs_mount_ro."""
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
                                   "mapping (use the CLI's --fs-mount)" % (name, virt))
        if not virt.startswith("/"):
            raise PolicyValueError("%s %r: the virtual path must be absolute" % (name, virt))
        out[virt] = host
    return out
