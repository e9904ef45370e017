"""Sandbox's configuration fields, declared once.

FIELDS is the table: one row per keyword, in the order of Sandbox's
signature, naming the check that validates (and normalizes) a value given
to it (_checks.py and the feature modules) and how the normalized value
reaches the native builder.  Everything else is derived from the rows:
the attribute of each field (validated when assigned), what a run's
snapshot holds, the builder calls (build()), ``==`` and ``repr``, and
what a profile key sets (profile.py: the library reads and checks the
file, each row names the key of its normalized JSON that feeds it).
A new keyword = a row here and its typed parameter in Sandbox.__init__
(test_fields.py checks that the two agree).
"""

import ctypes
import fractions
import os
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

from . import _checks as ck
from . import _chroot, _cow, _http, _knobs, _native, _policy, _trace
from ._native import Cfg, Ptr

_lib = _native.lib

# What a row does with the normalized value: (builder, value, the whole
# snapshot) -> builder.  The snapshot is there for the one field whose
# call depends on another setting (max_processes under confine()).
Apply = Callable[[Ptr, Any, Cfg], Ptr]
Check = Callable[[str, Any], Any]


def _setter(name: str) -> Callable[..., Ptr]:
    fn: Callable[..., Ptr] = getattr(_lib, "sandlock_sandbox_builder_" + name)
    return fn


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _same(v: Any) -> Any:
    return v


def each(setter: str, conv: Callable[[Any], Any] = os.fsencode) -> Apply:
    """One call per item of a list field."""
    def apply(b: Ptr, v: Any, c: Cfg) -> Ptr:
        fn = _setter(setter)
        for x in v or ():
            b = fn(b, conv(x))
        return b
    return apply


def opt(setter: str, conv: Callable[[Any], Any] = _same) -> Apply:
    """One call when the field is set (not None)."""
    def apply(b: Ptr, v: Any, c: Cfg) -> Ptr:
        return b if v is None else _setter(setter)(b, conv(v))
    return apply


def flag(setter: str) -> Apply:
    """One call with true when the flag is on."""
    def apply(b: Ptr, v: Any, c: Cfg) -> Ptr:
        return _setter(setter)(b, True) if v else b
    return apply


def always(setter: str, conv: Callable[[Any], Any]) -> Apply:
    """One call whatever the value."""
    def apply(b: Ptr, v: Any, c: Cfg) -> Ptr:
        return _setter(setter)(b, conv(v))
    return apply


def _env(b: Ptr, v: Any, c: Cfg) -> Ptr:
    for k, x in v:  # (name, value) pairs in the snapshot
        b = _setter("env_var")(b, os.fsencode(k), os.fsencode(x))
    return b


def _max_processes(b: Ptr, v: Any, c: Cfg) -> Ptr:
    # None = no limit (0 in the C ABI, whose default is 64 as here); confine()
    # has no supervisor to count processes and leaves it out.
    if c.get("_confine"):
        return b
    return _setter("max_processes")(b, v or 0)


def _timeout_ms(v: float) -> int:
    return max(1, int(round(v * 1000)))


def _net_allow(b: Ptr, v: Any, c: Cfg) -> Ptr:
    for p in v:  # int TCP ports or endpoint rules
        if isinstance(p, int):
            b = _setter("net_allow_port")(b, p)
        else:
            b = _setter("net_allow")(b, p.encode())
    return b


def _gpu_devices(b: Ptr, v: Any, c: Cfg) -> Ptr:
    if v is None:
        return b
    ids = list(v)
    return _setter("gpu_devices")(
        b, (ctypes.c_uint32 * max(1, len(ids)))(*ids), len(ids))


def _trace_hook(b: Ptr, v: Any, c: Cfg) -> Ptr:
    if v is None:
        return b
    b = _setter("on_decision")(b, v.c_fn, None)
    # The filter's own refusals (ptrace, mount, argument rules) too.
    return _setter("report_filter_refusals")(b, True)


def _policy_hook(b: Ptr, v: Any, c: Cfg) -> Ptr:
    return b if v is None else _setter("policy_callback")(b, v.cfunc, None)


def mounts(setter: str) -> Apply:
    """One call per (virtual, host) pair of a mount field's snapshot."""
    def apply(b: Ptr, v: Any, c: Cfg) -> Ptr:
        for virt, host in v:
            b = _setter(setter)(b, os.fsencode(virt), os.fsencode(host))
        return b
    return apply


def _credentials(b: Ptr, v: Any, c: Cfg) -> Ptr:
    for k, x in v:
        b = _setter("credential")(b, ("%s=%s" % (k, x)).encode())
    return b


def _str_enc(s: str) -> bytes:
    return s.encode()


# A profile's normalized values (sandlock_profile_load's JSON) are mostly
# the keyword's values as they are; these are the others.
FromProfile = Callable[[Any], Any]


def _seconds(ns: int) -> fractions.Fraction:
    """time_start: the profile's Unix nanoseconds, exactly, as seconds."""
    return fractions.Fraction(ns, 1000000000)


def _mounts_of(read_only: bool) -> FromProfile:
    """[filesystem] mount's [{virtual, host, read_only}] as the mapping of
    fs_mount (read-write ones) or fs_mount_ro (read-only ones)."""
    def conv(v: Any) -> Dict[str, str]:
        return {m["virtual"]: m["host"] for m in v if m["read_only"] == read_only}
    return conv


class Field(NamedTuple):
    """One keyword of Sandbox."""

    name: str
    check: Check    # (name, value given) -> normalized value, or PolicyError
    apply: Apply    # the builder calls of the normalized value
    # Reading the attribute gives the value as given ("512M"), not the
    # normalized one (bytes): the size fields.
    given: bool = False
    # What == compares for this field, when not the normalized value.
    compared: Optional[Callable[[Any], Any]] = None
    # The profile key that sets it ("section key", docs/profiles.md), and
    # how that key's normalized JSON value becomes this keyword's value.
    profile: str = ""
    from_profile: FromProfile = _same


# The fields, in the order of Sandbox's signature (also the order of the
# builder calls: for one protection the last call wins, so disable comes
# after allow_degraded).
FIELDS: Tuple[Field, ...] = (
    Field("fs_readable", ck.path_list, each("fs_read"),
          profile="filesystem read"),
    Field("fs_writable", ck.path_list, each("fs_write"),
          profile="filesystem write"),
    Field("fs_denied", ck.path_list, each("fs_deny"),
          profile="filesystem deny"),
    Field("cwd", ck.opt_path, opt("cwd", os.fsencode),
          profile="program cwd"),
    Field("env", ck.env, _env,
          profile="program env"),
    Field("clean_env", ck.boolean, flag("clean_env"),
          profile="program clean_env"),
    Field("max_processes", ck.max_processes, _max_processes,
          profile="limits processes"),
    Field("max_memory", ck.max_memory, opt("max_memory"), given=True,
          profile="limits memory"),
    Field("net_allow", ck.specs, _net_allow,
          profile="network allow"),
    Field("net_allow_bind", ck.bind_specs, each("net_allow_bind", _str_enc),
          profile="network allow_bind"),
    Field("timeout", ck.timeout, opt("timeout_ms", _timeout_ms)),
    Field("name", ck.sandbox_name, opt("name", _utf8)),
    Field("random_seed", ck.random_seed, opt("random_seed"),
          profile="determinism random_seed"),
    Field("time_start", ck.time_start, opt("time_start_ns"),
          profile="determinism time_start", from_profile=_seconds),
    Field("extra_allow_syscalls", ck.syscall_groups, each("extra_allow_syscalls", _str_enc),
          profile="syscalls extra_allow"),
    Field("max_open_files", _knobs.max_open_files, opt("max_open_files"),
          profile="limits open_files"),
    Field("max_cpu", _knobs.max_cpu, opt("max_cpu"),
          profile="limits cpu"),
    Field("cpu_cores", _knobs.cpu_cores, each("cpu_core", _same),
          profile="limits cpu_cores"),
    Field("no_coredump", _knobs.flag, flag("no_coredump"),
          profile="program no_coredump"),
    Field("no_huge_pages", _knobs.flag, flag("no_huge_pages"),
          profile="program no_huge_pages"),
    Field("no_randomize_memory", _knobs.flag, flag("no_randomize_memory"),
          profile="determinism no_randomize_memory"),
    Field("extra_deny_syscalls", _knobs.syscall_names, each("extra_deny_syscalls", _str_enc),
          profile="syscalls extra_deny"),
    Field("allow_degraded", _knobs.protections, each("allow_degraded", int)),
    Field("disable", _knobs.protections, each("disable", int)),
    Field("net_deny", ck.deny_specs, each("net_deny", _str_enc),
          profile="network deny"),
    Field("net_deny_bind", ck.bind_specs, each("net_deny_bind", _str_enc),
          profile="network deny_bind"),
    Field("net_allow_unix", ck.path_list, each("net_allow_unix")),
    Field("net_unix_readable", ck.boolean, flag("net_unix_readable")),
    Field("port_remap", ck.boolean, flag("port_remap"),
          profile="network port_remap"),
    Field("net_host_interfaces", ck.boolean, flag("net_host_interfaces"),
          profile="network host_interfaces"),
    Field("tmp", ck.boolean, flag("private_tmp"),
          profile="filesystem tmp"),
    Field("max_output", ck.max_output, opt("max_output")),
    Field("trace", _trace.check, _trace_hook),
    Field("audit_denials", ck.boolean, flag("audit_denials")),
    Field("num_cpus", _knobs.num_cpus, opt("num_cpus"),
          profile="limits num_cpus"),
    Field("deterministic_dirs", _knobs.flag, flag("deterministic_dirs"),
          profile="determinism deterministic_dirs"),
    Field("workdir", ck.opt_path, opt("workdir", os.fsencode),
          profile="config workdir"),
    Field("fs_storage", ck.opt_path, opt("fs_storage", os.fsencode),
          profile="config fs_storage"),
    Field("on_exit", _cow.action, always("on_exit", _cow.c_action),
          profile="filesystem on_exit"),
    Field("on_error", _cow.action, always("on_error", _cow.c_action),
          profile="filesystem on_error"),
    Field("max_disk", _cow.max_disk, opt("max_disk"), given=True,
          profile="limits disk"),
    Field("policy_fn", _policy.check, _policy_hook, compared=_policy.user_fn),
    Field("chroot", ck.opt_path, opt("chroot", os.fsencode),
          profile="filesystem chroot"),
    Field("image", ck.opt_path, opt("image", _str_enc)),
    Field("fs_mount", _chroot.mounts, mounts("fs_mount"),
          profile="filesystem mount", from_profile=_mounts_of(False)),
    Field("fs_mount_ro", _chroot.mounts, mounts("fs_mount_ro"),
          profile="filesystem mount", from_profile=_mounts_of(True)),
    Field("gpu_devices", _knobs.gpu_devices, _gpu_devices,
          profile="limits gpu_devices"),
    Field("http_allow", _http.rules, each("http_allow", _str_enc),
          profile="http allow"),
    Field("http_deny", _http.rules, each("http_deny", _str_enc),
          profile="http deny"),
    Field("http_ports", _http.ports, each("http_port", _same),
          profile="http ports"),
    Field("http_ca", _http.opt_path, opt("http_ca", os.fsencode),
          profile="config http_ca"),
    Field("http_key", _http.opt_path, opt("http_key", os.fsencode),
          profile="config http_key"),
    Field("http_inject_ca", _http.strs, each("http_inject_ca"),
          profile="config http_inject_ca"),
    Field("http_ca_out", _http.opt_path, opt("http_ca_out", os.fsencode),
          profile="config http_ca_out"),
    Field("http_credentials", _http.credentials, _credentials),
    Field("http_auth", _http.auth_rules, each("http_auth", _str_enc)),
    Field("http_log", _http.opt_path, opt("http_log", os.fsencode)),
)
BY_NAME: Dict[str, Field] = {f.name: f for f in FIELDS}


class Attribute:
    """The attribute of a field on Sandbox: validated (and normalized) when
    assigned.  The normalized value lives in the instance's ``_cfg`` dict
    (what runs use); reading the attribute gives it back as the reference's
    dataclass would: a list for a list field, and for ``given`` fields
    (sizes) the value as it was given ("512M"; memory_bytes() has the
    bytes)."""

    def __init__(self, field: Field) -> None:
        self.field = field

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        name = self.field.name
        return public(self.field, obj._given.get(name), obj._cfg[name])

    def __set__(self, obj: Any, value: Any) -> None:
        name = self.field.name
        obj._cfg[name] = self.field.check(name, value)
        if self.field.given:
            obj._given[name] = value


def install(cls: type) -> None:
    """Give cls (Sandbox) one Attribute per field."""
    for f in FIELDS:
        setattr(cls, f.name, Attribute(f))


def snapshot(cfg: Cfg, timeout: Optional[float],
             overrides: Optional[Cfg] = None) -> Tuple[Tuple[str, Any], ...]:
    """The configuration a run uses, as a hashable tuple of (field, value)
    pairs (the cache key).  ``env`` and the mounts are re-validated: they
    are the fields a caller can change in place."""
    c = dict(cfg)
    c["env"] = tuple(sorted(ck.env("env", c["env"]).items()))
    for name in ("fs_mount", "fs_mount_ro"):
        c[name] = tuple(sorted(_chroot.mounts(name, c[name]).items()))
    _chroot.check_disjoint(dict(c["fs_mount"]), dict(c["fs_mount_ro"]))
    if timeout is not None:
        c["timeout"] = timeout
    c.update(overrides or {})
    return tuple(sorted(c.items(), key=lambda kv: kv[0]))


def compared(cfg: Cfg, given: Dict[str, Any]) -> Dict[str, Any]:
    """What == compares: every field's value (as given for the given
    fields, through its ``compared`` for the others that have one)."""
    c = dict(snapshot(cfg, None))
    for f in FIELDS:
        if f.given:
            c[f.name] = given[f.name]
        elif f.compared is not None:
            c[f.name] = f.compared(c[f.name])
    return c


def public(f: Field, given: Any, normalized: Any) -> Any:
    """What reading field f's attribute gives."""
    if f.given:
        return given
    return list(normalized) if isinstance(normalized, tuple) else normalized


def defaults(signature: Dict[str, Any]) -> Dict[str, Any]:
    """Each field's default as its attribute reads it, from the defaults of
    Sandbox's signature (env=None reads {}, a tuple reads as a list)."""
    return {f.name: public(f, signature[f.name], f.check(f.name, signature[f.name]))
            for f in FIELDS}


def build(snap: Tuple[Tuple[str, Any], ...]) -> Ptr:
    """A native sandbox of snapshot snap (PolicyError when the library
    refuses the configuration)."""
    from ._result import raise_from

    cfg = dict(snap)
    b = _setter("new")()
    if not b:
        raise MemoryError("sandlock_sandbox_builder_new failed")
    for f in FIELDS:
        b = f.apply(b, cfg[f.name], cfg)
    err, msg = _native.error_out()
    sb: Ptr = _lib.sandlock_sandbox_build(b, ctypes.byref(err), ctypes.byref(msg))
    if not sb:
        raise_from(err, msg, "sandlock_sandbox_build", building=True)
    return sb
