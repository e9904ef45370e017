"""TOML profiles, the same files and schema as ``sandlock run --profile``.

    from sandlock.profile import load_profile, list_profiles
    sb = load_profile("build")          # ~/.config/sandlock/profiles/build.toml
    sb.run(["make", "-j4"])

A profile uses the reference's sections (``[config]``, ``[determinism]``,
``[program]``, ``[filesystem]``, ``[network]``, ``[http]``, ``[syscalls]``,
``[limits]``).  The file is read, parsed and checked by the C library
(``sandlock_profile_load``, the reader the CLI uses too), so both accept
exactly the same files and refuse the others with the same words
(``PATH:LINE:COL: [section] key: reason``); no TOML module is needed.
Each key of its normalized result sets the Sandbox keyword whose row in
the field table (``_fields.FIELDS``, column ``profile``) names it.  Keys
of features sandlock does not have yet raise ProfileError ("not supported
yet") unless their value asks for nothing (``false``, ``[]``, ``{}``);
unknown keys and sections raise ProfileError too.  ``[program] exec``/``args``
are not sandbox policy: read them with :func:`read_profile`.
"""

import ctypes
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import _fields, _native
from .exceptions import ERR_INVALID, PolicyError, PolicyValueError
from .sandbox import Sandbox

__all__ = ["ProfileError", "Profile", "profiles_dir", "list_profiles", "read_profile",
           "load_profile"]


class ProfileError(PolicyValueError):
    """A profile that cannot be read, parsed or applied (a ValueError, and a
    sandlock PolicyError like every invalid configuration)."""


@dataclass(frozen=True)
class Profile:
    """A parsed profile: ``sandbox_kwargs`` for :class:`sandlock.Sandbox`,
    and the ``[program]`` command (``exec`` + ``args``, or empty)."""

    path: str
    sandbox_kwargs: Dict[str, Any] = field(default_factory=dict)
    command: Tuple[str, ...] = ()


_NAME_RE = re.compile(r"^[^./][^/]*$")


def profiles_dir() -> str:
    """``$XDG_CONFIG_HOME/sandlock/profiles``, else ``~/.config/sandlock/profiles``
    (a relative XDG_CONFIG_HOME is ignored, as the XDG spec says)."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "sandlock", "profiles")
    home = os.environ.get("HOME", "")
    if not home.startswith("/"):
        raise ProfileError("cannot find the profiles directory: neither XDG_CONFIG_HOME nor "
                           "HOME is an absolute path")
    return os.path.join(home, ".config", "sandlock", "profiles")


def list_profiles() -> List[str]:
    """Names of the profiles in :func:`profiles_dir`, sorted (none if it is absent)."""
    try:
        entries = os.listdir(profiles_dir())
    except FileNotFoundError:
        return []
    return sorted(e[:-5] for e in entries
                  if e.endswith(".toml") and len(e) > 5 and not e.startswith("."))


def _profile_path(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ProfileError("invalid profile name %r (pass path= for a file)" % (name,))
    return os.path.join(profiles_dir(), name + ".toml")


# ---------------------------------------------------------------- reading

def _load_json(path: str) -> Dict[str, Dict[str, Any]]:
    """The profile read, parsed and checked by the library (the CLI's one
    reader, so both accept the same files), normalized: {section: {key:
    value}}, sizes in bytes, time_start in Unix ns, relative host paths
    beside the profile, mounts as {virtual, host, read_only}."""
    err, msg = _native.error_out()
    raw = _native.lib.sandlock_profile_load(os.fsencode(path), ctypes.byref(err),
                                            ctypes.byref(msg))
    text = _native.take_string(raw)
    if text is None:
        why = _native.take_string(msg.value)
        raise ProfileError(err.value or ERR_INVALID,
                           why.decode(errors="replace") if why else "%s: cannot load" % path)
    doc: Dict[str, Dict[str, Any]] = json.loads(text.decode("utf-8"))
    return doc


# profile key ("section key") -> the rows of Sandbox's field table it feeds
_FED: Dict[str, List[_fields.Field]] = {}
for _f in _fields.FIELDS:
    if _f.profile:
        _FED.setdefault(_f.profile, []).append(_f)


def _apply(path: str, doc: Dict[str, Dict[str, Any]]) -> Profile:
    kwargs: Dict[str, Any] = {}
    program = doc.get("program", {})
    for section, body in doc.items():
        for key, value in body.items():
            if section == "program" and key in ("exec", "args"):
                continue  # the command, not sandbox policy
            rows = _FED.get("%s %s" % (section, key))
            if not rows:  # a key the library knows and this package does not: never dropped
                raise ProfileError("%s: [%s] %s: not supported by this Python package"
                                   % (path, section, key))
            for f in rows:
                kwargs[f.name] = f.from_profile(value)
    exec_ = program.get("exec")
    command = (exec_, *program.get("args", [])) if exec_ is not None else ()
    return Profile(path=path, sandbox_kwargs=kwargs, command=command)


def read_profile(name: Optional[str] = None, *, path: Optional[str] = None) -> Profile:
    """Parse and validate a profile, by ``name`` (in :func:`profiles_dir`) or ``path``."""
    if (name is None) == (path is None):
        raise TypeError("give exactly one of name and path")
    p = _profile_path(name) if name is not None else os.fspath(path)  # type: ignore[arg-type]
    return _apply(p, _load_json(p))


def load_profile(name: Optional[str] = None, *, path: Optional[str] = None,
                 **overrides: Any) -> Sandbox:
    """A :class:`sandlock.Sandbox` configured by the profile; keyword
    ``overrides`` replace the profile's values (e.g. ``timeout=10``)."""
    prof = read_profile(name, path=path)
    kwargs = dict(prof.sandbox_kwargs)
    kwargs.update(overrides)
    try:
        return Sandbox(**kwargs)
    except PolicyError as e:  # e.g. a time_start string Sandbox cannot parse
        if isinstance(e, ProfileError):
            raise
        raise ProfileError("%s: %s" % (prof.path, e)) from e
