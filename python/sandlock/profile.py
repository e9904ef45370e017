"""TOML profiles, the same files and schema as ``sandlock run --profile``.

    from sandlock.profile import load_profile, list_profiles
    sb = load_profile("build")          # ~/.config/sandlock/profiles/build.toml
    sb.run(["make", "-j4"])

A profile uses the reference's sections (``[config]``, ``[determinism]``,
``[program]``, ``[filesystem]``, ``[network]``, ``[http]``, ``[syscalls]``,
``[limits]``).  Keys whose feature sandlock has are applied; keys of
features it does not have yet raise ProfileError ("not supported yet")
unless their value asks for nothing (``false``, ``[]``, ``{}``); unknown
keys and sections raise ProfileError too.  Applied: ``[program]`` env, cwd,
clean_env; ``[filesystem]`` read, write, deny; ``[network]`` allow,
allow_bind (ports); ``[determinism]`` random_seed, time_start, no_randomize_memory; ``[program]``
no_coredump, no_huge_pages; ``[syscalls]`` extra_allow, extra_deny;
``[limits]`` memory, processes, open_files, cpu, cpu_cores.  ``[program] exec``/``args`` are
not sandbox policy: read them with :func:`read_profile`.
"""

import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Type, TypeVar, Union, cast

if TYPE_CHECKING:  # for the annotation only: sandlock imports this module
    from . import Sandbox

from .exceptions import PolicyValueError

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - older Pythons: python3-tomli
    import tomli as _toml

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


# ---------------------------------------------------------------- schema

class _Ctx:
    def __init__(self, path: str, section: str, key: str):
        self.where = "%s: [%s] %s" % (path, section, key)

    def fail(self, msg: str) -> "ProfileError":
        return ProfileError("%s: %s" % (self.where, msg))


def _type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string",
            list: "array", dict: "table"}.get(type(v), type(v).__name__)


_T = TypeVar("_T")


def _want(c: _Ctx, v: Any, t: Type[_T]) -> _T:
    if type(v) is not t:
        raise c.fail("expected %s, got %s" % (_type_name(t()), _type_name(v)))
    return v


def _str_list(c: _Ctx, v: Any) -> List[str]:
    return [_want(c, x, str) for x in _want(c, v, list)]


def _ports(c: _Ctx, v: Any) -> List[Union[int, str]]:
    """Rules as strings, ports as integers; Sandbox checks their syntax."""
    out: List[Union[int, str]] = []
    for x in _want(c, v, list):
        if type(x) is int:
            if not 1 <= x <= 65535:
                raise c.fail("port %d is not in 1-65535" % x)
        elif type(x) is not str:
            raise c.fail("expected a rule (string) or a port (integer), got %s" % _type_name(x))
        out.append(x)
    return out


def _env(c: _Ctx, v: Any) -> Dict[str, str]:
    out = {}
    for k, val in _want(c, v, dict).items():
        _want(c, val, str)
        if not k or "=" in k:
            raise c.fail("variable name %r is empty or has '='" % k)
        out[k] = val
    return out


def _memory(c: _Ctx, v: Any) -> Union[int, str]:
    if type(v) is int:
        if v <= 0:
            raise c.fail("must be greater than zero")
        return v
    if type(v) is str:
        return v  # Sandbox parses it (parse_memory_size, as the CLI does)
    raise c.fail("expected bytes (integer) or a size string such as \"512M\", got %s"
                 % _type_name(v))


def _processes(c: _Ctx, v: Any) -> int:
    n = _want(c, v, int)
    if not 0 <= n <= 0xFFFFFFFF:
        raise c.fail("must be 0 (no limit) to 4294967295")
    return n


def _seed(c: _Ctx, v: Any) -> int:
    n = _want(c, v, int)
    if not 0 <= n < 1 << 64:
        raise c.fail("must be 0 to 2**64-1")
    return n


def _time_start(c: _Ctx, v: Any) -> Union[int, float, str]:
    # Unix seconds or an RFC 3339 string; tomllib turns a bare TOML date
    # into a datetime, which the C CLI does not accept: refuse it here too.
    if type(v) in (int, float):
        if not v >= 0:
            raise c.fail("out of range (Unix seconds, not before 1970)")
        return cast(Union[int, float], v)
    if type(v) is str:
        return v
    raise c.fail("expected Unix seconds or an RFC 3339 string, got %s" % _type_name(v))


def _int_range(c: _Ctx, v: Any, lo: int, hi: int) -> int:
    n = _want(c, v, int)
    if not lo <= n <= hi:
        raise c.fail("must be %d to %d" % (lo, hi))
    return n


def _bool(c: _Ctx, v: Any) -> bool:
    return _want(c, v, bool)


def _string(c: _Ctx, v: Any) -> str:
    return _want(c, v, str)


def _mounts(c: _Ctx, v: Any) -> Dict[str, str]:
    """["VIRTUAL:HOST", ...] as fs_mount's mapping; ":ro" cannot be said
    in the mapping (the CLI honours it): refused, never dropped."""
    out = {}
    for item in _str_list(c, v):
        virt, sep, host = item.partition(":")
        if not sep or not virt or not host:
            raise c.fail("%r: expected VIRTUAL:HOST" % (item,))
        if host.endswith(":ro"):
            raise c.fail("%r: a read-only mount is not supported by the Python SDK "
                         "(use sandlock run --profile-file)" % (item,))
        out[virt] = host[:-3] if host.endswith(":rw") else host
    return out


def _branch_action(c: _Ctx, v: Any) -> str:
    s = _want(c, v, str)
    if s not in ("commit", "abort", "keep"):
        raise c.fail("%r is not a branch action (commit, abort or keep)" % s)
    return s


_UNSUPPORTED = "unsupported"
_NEVER = "never"  # gpu_devices = [] would mean "every GPU": no value asks nothing

# (section, key) -> (Sandbox keyword or a [program] field, converter)
_SCHEMA: Dict[Tuple[str, str], Any] = {
    ("determinism", "random_seed"): ("random_seed", _seed),
    ("determinism", "time_start"): ("time_start", _time_start),
    ("program", "exec"): ("exec", _string),
    ("program", "args"): ("args", _str_list),
    ("program", "env"): ("env", _env),
    ("program", "cwd"): ("cwd", _string),
    ("program", "clean_env"): ("clean_env", _bool),
    ("filesystem", "read"): ("fs_readable", _str_list),
    ("filesystem", "write"): ("fs_writable", _str_list),
    ("filesystem", "deny"): ("fs_denied", _str_list),
    ("network", "allow"): ("net_allow", _ports),
    ("network", "allow_bind"): ("net_allow_bind", _ports),
    ("network", "deny_bind"): ("net_deny_bind", _ports),
    ("network", "deny"): ("net_deny", _str_list),
    ("network", "port_remap"): ("port_remap", _bool),
    ("network", "host_interfaces"): ("net_host_interfaces", _bool),
    ("syscalls", "extra_allow"): ("extra_allow_syscalls", _str_list),
    ("syscalls", "extra_deny"): ("extra_deny_syscalls", _str_list),
    ("program", "no_coredump"): ("no_coredump", _bool),
    ("program", "no_huge_pages"): ("no_huge_pages", _bool),
    ("determinism", "no_randomize_memory"): ("no_randomize_memory", _bool),
    ("determinism", "deterministic_dirs"): ("deterministic_dirs", _bool),
    ("limits", "num_cpus"): ("num_cpus", lambda c, v: _int_range(c, v, 1, 1024)),
    ("limits", "open_files"): ("max_open_files", lambda c, v: _int_range(c, v, 1, 0xFFFFFFFF)),
    ("limits", "cpu"): ("max_cpu", lambda c, v: _int_range(c, v, 1, 100)),
    ("limits", "cpu_cores"): ("cpu_cores", lambda c, v: [_int_range(c, x, 0, 1023)
                                                        for x in _want(c, v, list)]),
    ("limits", "memory"): ("max_memory", _memory),
    ("limits", "processes"): ("max_processes", _processes),
    ("limits", "gpu_devices"): ("gpu_devices", lambda c, v: [_int_range(c, x, 0, 255)
                                                            for x in _want(c, v, list)]),
    ("config", "workdir"): ("workdir", _string),
    ("config", "fs_storage"): ("fs_storage", _string),
    ("filesystem", "chroot"): ("chroot", _string),
    ("filesystem", "mount"): ("fs_mount", _mounts),
    ("filesystem", "on_exit"): ("on_exit", _branch_action),
    ("filesystem", "on_error"): ("on_error", _branch_action),
    ("filesystem", "tmp"): ("tmp", _bool),
    ("limits", "disk"): ("max_disk", _memory),
    ("config", "http_ca"): ("http_ca", _string),
    ("config", "http_key"): ("http_key", _string),
    ("config", "http_inject_ca"): ("http_inject_ca", _str_list),
    ("config", "http_ca_out"): ("http_ca_out", _string),
    ("http", "ports"): ("http_ports", lambda c, v: [_int_range(c, x, 1, 65535)
                                                    for x in _want(c, v, list)]),
    ("http", "allow"): ("http_allow", _str_list),
    ("http", "deny"): ("http_deny", _str_list),
}
for _s, _keys in {
    "program": "uid gid no_supervisor",
}.items():
    for _k in _keys.split():
        _SCHEMA[(_s, _k)] = _UNSUPPORTED
_SECTIONS = {s for s, _ in _SCHEMA}


# Host paths: a relative one is beside the profile (its own directory), as
# the reference resolves them and the CLI does, not in the caller's cwd.
_PATH_LISTS = ("fs_readable", "fs_writable", "fs_denied")
_PATHS = ("workdir", "fs_storage", "chroot")


def _beside(path: str, p: str) -> str:
    return p if p.startswith("/") else os.path.join(os.path.dirname(path), p)


def _beside_profile(path: str, name: str, value: Any) -> Any:
    if name in _PATH_LISTS:
        return [_beside(path, p) for p in value]
    if name in _PATHS:
        return _beside(path, value)
    if name == "fs_mount":
        return {virt: _beside(path, host) for virt, host in value.items()}
    return value


def _asks_nothing(v: Any) -> bool:
    return v is False or v == [] or v == {}


def _apply(path: str, doc: Dict[str, Any]) -> Profile:
    kwargs: Dict[str, Any] = {}
    exec_: Optional[str] = None
    args: List[str] = []
    for section, body in doc.items():
        if not isinstance(body, dict):
            raise ProfileError("%s: top-level key %r: profile keys belong in a section such as "
                               "[filesystem] or [limits]" % (path, section))
        if section not in _SECTIONS:
            raise ProfileError("%s: unknown section [%s]" % (path, section))
        for key, value in body.items():
            spec = _SCHEMA.get((section, key))
            c = _Ctx(path, section, key)
            if spec is None:
                raise ProfileError("%s: unknown key %r in [%s]" % (path, key, section))
            if spec == _NEVER or (spec == _UNSUPPORTED and not _asks_nothing(value)):
                raise c.fail("not supported yet by this sandlock")
            if spec == _UNSUPPORTED:
                continue
            name, conv = spec
            value = _beside_profile(path, name, conv(c, value))
            if name == "exec":
                if not value:
                    raise c.fail("empty command")
                exec_ = value
            elif name == "args":
                args = value
            else:
                kwargs[name] = value
    if args and exec_ is None:
        raise ProfileError("%s: [program] args without exec" % path)
    command = (exec_, *args) if exec_ is not None else ()
    return Profile(path=path, sandbox_kwargs=kwargs, command=command)


# The TOML the CLI's parser (src/profile/toml.c) refuses, refused here too with
# its words, so that a profile means the same to both loaders.
_HEX = re.compile(r"(?<![\w.])[+-]?0[xob]")


def _outside_strings(line: str) -> Tuple[str, bool]:
    """(line without its strings and comment, contents blanked; whether a
    multi-line string starts on it)."""
    out: List[str] = []
    q: Optional[str] = None
    i = 0
    while i < len(line):
        ch = line[i]
        if q:
            if ch == "\\" and q == '"':
                i += 2
                continue
            if ch == q:
                q = None
            out.append(" ")
        elif ch in "\"'":
            if line[i:i + 3] == ch * 3:
                return "".join(out), True
            q = ch
            out.append(" ")
        elif ch == "#":
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out), False


def _check_grammar(path: str, text: str) -> None:
    for n, line in enumerate(text.splitlines(), 1):
        where = "%s:%d: " % (path, n)
        bare, multiline = _outside_strings(line)
        if multiline:
            raise ProfileError(where + "multi-line strings are not supported")
        stripped = bare.strip()
        if stripped.startswith("[["):
            raise ProfileError(where + "arrays of tables ([[...]]) are not supported")
        if stripped.startswith("["):
            continue  # a [table] header (or an array's continuation line)
        for part in bare.split("{"):
            key, eq, _ = part.partition("=")
            if eq and "." in key.split(",")[-1]:
                raise ProfileError(where + "dotted keys are not supported (use a [table] or "
                                   "an inline table)")
        if _HEX.search(bare.partition("=")[2] if "=" in bare else bare):
            raise ProfileError(where + "hexadecimal, octal and binary integers are not "
                               "supported")


def _check_values(path: str, v: Any) -> None:
    import datetime
    import math

    if isinstance(v, dict):
        for x in v.values():
            _check_values(path, x)
    elif isinstance(v, list):
        for x in v:
            _check_values(path, x)
    elif isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        raise ProfileError("%s: dates and times are not supported (write them as strings)"
                           % path)
    elif isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        raise ProfileError("%s: inf and nan are not supported" % path)


def read_profile(name: Optional[str] = None, *, path: Optional[str] = None) -> Profile:
    """Parse and validate a profile, by ``name`` (in :func:`profiles_dir`) or ``path``."""
    if (name is None) == (path is None):
        raise TypeError("give exactly one of name and path")
    p = _profile_path(name) if name is not None else os.fspath(path)  # type: ignore[arg-type]
    try:
        with open(p, "rb") as f:
            raw = f.read()
        doc = _toml.loads(raw.decode("utf-8"))
    except OSError as e:
        raise ProfileError("%s: %s" % (p, e.strerror or e)) from e
    except (_toml.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ProfileError("%s: %s" % (p, e)) from e
    _check_grammar(p, raw.decode("utf-8"))
    _check_values(p, doc)
    return _apply(p, doc)


def load_profile(name: Optional[str] = None, *, path: Optional[str] = None,
                 **overrides: Any) -> "Sandbox":
    """A :class:`sandlock.Sandbox` configured by the profile; keyword
    ``overrides`` replace the profile's values (e.g. ``timeout=10``)."""
    from . import PolicyError, Sandbox

    prof = read_profile(name, path=path)
    kwargs = dict(prof.sandbox_kwargs)
    kwargs.update(overrides)
    try:
        return Sandbox(**kwargs)
    except PolicyError as e:  # e.g. a time_start string Sandbox cannot parse
        if isinstance(e, ProfileError):
            raise
        raise ProfileError("%s: %s" % (prof.path, e)) from e
