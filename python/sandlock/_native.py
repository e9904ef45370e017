"""ctypes declarations of the libsandlock C ABI (include/sandlock.h).

Only this module touches ctypes prototypes; everything else goes through
the names defined here.  The library is loaded with ``ctypes.CDLL`` so the
GIL is released for the duration of every call (in particular the blocking
``sandlock_run*``), which lets handler callbacks coming from the supervisor
threads take the GIL themselves.

Lookup order for the shared library:

1. the ``SANDLOCK_LIB`` environment variable (an explicit path: if it is set
   but cannot be loaded, that is an error, we never fall back silently);
2. ``libsandlock.so`` next to this package (``pip install ./python`` bundles
   the in-tree build there when it exists);
3. ``<repo>/build/libsandlock.so`` relative to the package directory
   (``python/sandlock/../../build``), for an in-tree checkout;
4. ``libsandlock.so.1`` by its SONAME through the dynamic loader's search
   path, i.e. the library that ``make install`` put in the system;
5. ``ctypes.util.find_library("sandlock")``.
"""

import ctypes
import ctypes.util
import os
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple, TypeVar

__all__ = ["lib", "LIB_PATH"]

# A C pointer as ctypes gives it back from a c_void_p result: an int, or
# None for NULL (the builder, sandbox, result and handle objects).
Ptr = Optional[int]
# A configuration snapshot: field name -> normalized value (what a run
# is built from: _fields.py).
Cfg = Dict[str, Any]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
SONAME = "libsandlock.so.1"

# ---- ABI numbers (sandlock.h; they never change meaning) ----
ERR_NAMES = {
    0: "OK",
    1: "INVALID",
    2: "NOT_FOUND",
    3: "BAD_PORT",
    4: "CONFLICT",
    5: "UNSUPPORTED",
    6: "SYSCALL",
    7: "SYSTEM",
    8: "NOMEM",
    9: "RUNNING",
}
ERR_RUNNING = 9

# stdio modes and spawn flags (sandlock.h)
STDIO_DEFAULT, STDIO_CAPTURE, STDIO_INHERIT, STDIO_DEVNULL, STDIO_FD, STDIO_PIPE = range(6)
SPAWN_CREATE = 1
SPAWN_PASS_IN_ORDER = 2  # pass_fds[i] -> the command's fd 3 + i


_C = TypeVar("_C", bound="Closing")


class Closing:
    """Mixin of the objects that own native resources through close():
    a context manager that closes on exit, and closes when collected."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: "_C") -> "_C":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _candidates() -> Iterator[Tuple[str, str]]:
    """(description, path) pairs in lookup order, minus the explicit env var."""
    yield "next to the package", os.path.join(_PKG_DIR, "libsandlock.so")
    repo = os.path.dirname(os.path.dirname(_PKG_DIR))
    yield "in-tree build", os.path.join(repo, "build", "libsandlock.so")


def _load() -> Tuple[ctypes.CDLL, str]:
    env = os.environ.get("SANDLOCK_LIB")
    if env:
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError(
                "sandlock: SANDLOCK_LIB=%r could not be loaded: %s" % (env, e)
            ) from e
    tried: List[str] = []
    for what, path in _candidates():
        if os.path.exists(path):
            try:
                return ctypes.CDLL(path), path
            except OSError as e:
                tried.append("%s (%s): %s" % (path, what, e))
        else:
            tried.append("%s (%s): not found" % (path, what))
    # The installed library, by SONAME: the major number is the ABI, so a
    # package built for ABI 0 never picks up an incompatible libsandlock.so.1.
    try:
        return ctypes.CDLL(SONAME), SONAME
    except OSError as e:
        tried.append("%s (installed, by SONAME): %s" % (SONAME, e))
    found = ctypes.util.find_library("sandlock")
    if found:
        try:
            return ctypes.CDLL(found), found
        except OSError as e:
            tried.append("%s (find_library): %s" % (found, e))
    else:
        tried.append("find_library('sandlock'): not found")
    raise ImportError(
        "sandlock: cannot find libsandlock.so. Build it with `make lib` or set "
        "SANDLOCK_LIB to its path. Tried:\n  " + "\n  ".join(tried)
    )


lib, LIB_PATH = _load()


# ---- structures ----
class Notif(ctypes.Structure):
    """struct sandlock_notif == the kernel's struct seccomp_notif (80 bytes)."""

    _fields_ = [
        ("id", ctypes.c_uint64),
        ("pid", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("syscall_nr", ctypes.c_int32),
        ("arch", ctypes.c_uint32),
        ("instruction_pointer", ctypes.c_uint64),
        ("args", ctypes.c_uint64 * 6),
    ]


class _Inject(ctypes.Structure):
    _fields_ = [
        ("srcfd", ctypes.c_int32),
        ("newfd_flags", ctypes.c_uint32),
        ("tracker", ctypes.c_uint64),
    ]


class _Kill(ctypes.Structure):
    _fields_ = [("sig", ctypes.c_int32), ("pgid", ctypes.c_int32)]


class _ActionUnion(ctypes.Union):
    _fields_ = [
        ("errno_value", ctypes.c_int32),
        ("return_value", ctypes.c_int64),
        ("inject", _Inject),
        ("kill", _Kill),
        ("raw", ctypes.c_uint64 * 2),
    ]


class Action(ctypes.Structure):
    """struct sandlock_action (24 bytes)."""

    _fields_ = [
        ("kind", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("u", _ActionUnion),
    ]


class Registration(ctypes.Structure):
    _fields_ = [("syscall", ctypes.c_char_p), ("handler", ctypes.c_void_p)]


class Stdio(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int32), ("fd", ctypes.c_int32)]


class SpawnOpts(ctypes.Structure):
    """sandlock_spawn_opts_t."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("stdio", Stdio * 3),
        ("pass_fds", ctypes.POINTER(ctypes.c_int32)),
        ("npass_fds", ctypes.c_size_t),
    ]


class PolicyEvent(ctypes.Structure):
    """struct sandlock_policy_event (sandlock.h): what policy_fn is asked about."""

    _fields_ = [
        ("syscall", ctypes.c_char_p),
        ("category", ctypes.c_char_p),
        ("pid", ctypes.c_int32),
        ("parent_pid", ctypes.c_int32),
        ("host", ctypes.c_char_p),
        ("port", ctypes.c_uint16),
        ("argv", ctypes.POINTER(ctypes.c_char_p)),
        ("argc", ctypes.c_size_t),
        ("denied", ctypes.c_bool),
    ]


class Decision(ctypes.Structure):
    """struct sandlock_decision (sandlock.h)."""

    _fields_ = [
        ("notif", ctypes.POINTER(Notif)),
        ("action", ctypes.POINTER(Action)),
        ("decided_by", ctypes.c_char_p),
    ]


class Opened(ctypes.Structure):
    """struct sandlock_opened (sandlock.h)."""

    _fields_ = [
        ("fd", ctypes.c_int32),
        ("newfd_flags", ctypes.c_uint32),
        ("dev", ctypes.c_uint64),
        ("ino", ctypes.c_uint64),
        ("path", ctypes.c_void_p),  # char *, freed with sandlock_string_free
    ]


assert ctypes.sizeof(Notif) == 80
assert ctypes.sizeof(Action) == 24

# ---- callback types ----
HANDLER_FN = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(Notif), ctypes.c_void_p,
    ctypes.POINTER(Action),
)
# The same C signature with every pointer as a plain address (int, or None
# for NULL).  The package's trampoline uses it: converting an argument to a
# POINTER(...) object on every call costs more than reading the memory at
# an address directly.
RAW_HANDLER_FN = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
)
UD_FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
POLICY_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(PolicyEvent),
                             ctypes.c_void_p)
DECISION_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(Decision))
OPEN_CHECK_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(Opened))
# fork mode (sandlock_fork_opts_t)
FORK_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
INIT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
WORK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32)


class ForkOpts(ctypes.Structure):
    """sandlock_fork_opts_t."""

    _fields_ = [("size", ctypes.c_size_t), ("init", INIT_FN), ("work", WORK_FN),
                ("fork_fn", FORK_FN), ("ud", ctypes.c_void_p)]


# ---- prototypes ----
_p = ctypes.c_void_p
_cs = ctypes.c_char_p
_int = ctypes.c_int
_errp = ctypes.POINTER(ctypes.c_int)
_msgp = ctypes.POINTER(ctypes.c_void_p)  # char ** (read back, then string_free)
_PA = ctypes.POINTER(Action)
_u8, _u16, _u32, _u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
_b = ctypes.c_bool


def _decl(name: str, restype: Any, *argtypes: Any) -> Any:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


# builder
_decl("sandlock_sandbox_builder_new", _p)
for _n in ("fs_read", "fs_write", "fs_deny", "cwd", "name"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _cs)
_decl("sandlock_sandbox_builder_env_var", _p, _p, _cs, _cs)
_decl("sandlock_sandbox_builder_clean_env", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_max_processes", _p, _p, ctypes.c_uint32)
_decl("sandlock_sandbox_builder_max_memory", _p, _p, ctypes.c_uint64)
_decl("sandlock_sandbox_builder_net_allow_port", _p, _p, ctypes.c_uint32)
_decl("sandlock_sandbox_builder_net_allow_bind_port", _p, _p, ctypes.c_uint32)
_decl("sandlock_sandbox_builder_net_allow", _p, _p, ctypes.c_char_p)
_decl("sandlock_sandbox_builder_net_deny", _p, _p, ctypes.c_char_p)
_decl("sandlock_sandbox_builder_net_allow_bind", _p, _p, ctypes.c_char_p)
_decl("sandlock_sandbox_builder_net_deny_bind", _p, _p, ctypes.c_char_p)
_decl("sandlock_sandbox_builder_net_allow_unix", _p, _p, ctypes.c_char_p)
_decl("sandlock_sandbox_builder_net_unix_readable", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_port_remap", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_net_host_interfaces", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_private_tmp", _p, _p, ctypes.c_bool)
_decl("sandlock_net_spec_error", _p, ctypes.c_char_p, ctypes.c_int)
_decl("sandlock_sandbox_builder_timeout_ms", _p, _p, ctypes.c_uint64)
_decl("sandlock_sandbox_builder_max_output", _p, _p, ctypes.c_uint64)
_decl("sandlock_sandbox_builder_random_seed", _p, _p, ctypes.c_uint64)
_decl("sandlock_sandbox_builder_time_start_ns", _p, _p, ctypes.c_int64)
_decl("sandlock_sandbox_builder_extra_allow_syscalls", _p, _p, _cs)
# limits, process settings, protections (_knobs.py)
for _n in ("max_open_files", "cpu_core", "allow_degraded", "disable", "num_cpus"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _u32)
_decl("sandlock_sandbox_builder_max_cpu", _p, _p, _u8)  # 1..100
for _n in ("no_coredump", "no_huge_pages", "no_randomize_memory", "deterministic_dirs"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _b)
_decl("sandlock_sandbox_builder_extra_deny_syscalls", _p, _p, _cs)
_decl("sandlock_sandbox_builder_gpu_devices", _p, _p, ctypes.POINTER(_u32), _u32)
_decl("sandlock_sandbox_protection_status", _int, _p, _u32)
_decl("sandlock_protection_min_abi", _u32, _u32)
_decl("sandlock_min_landlock_abi", _int)
_decl("sandlock_parse_memory_size", _int, _cs, ctypes.POINTER(_u64))
_decl("sandlock_check_report", _p)
_decl("sandlock_confine_refusal", _cs, _p)
_decl("sandlock_confine_err", _int, _p, _errp, _msgp)
# copy-on-write workdir (_cow.py)
for _n in ("workdir", "fs_storage"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _cs)
for _n in ("on_exit", "on_error"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _u8)
_decl("sandlock_sandbox_builder_max_disk", _p, _p, _u64)
# chroot (_chroot.py)
_decl("sandlock_sandbox_builder_chroot", _p, _p, _cs)
_decl("sandlock_sandbox_builder_image", _p, _p, _cs)
_decl("sandlock_sandbox_builder_fs_mount", _p, _p, _cs, _cs)
_decl("sandlock_sandbox_builder_fs_mount_ro", _p, _p, _cs, _cs)
# HTTP (_http.py)
for _n in ("http_allow", "http_deny", "http_ca", "http_key", "http_inject_ca", "http_ca_out",
           "credential", "http_auth", "http_log"):
    _decl("sandlock_sandbox_builder_" + _n, _p, _p, _cs)
_decl("sandlock_sandbox_builder_http_port", _p, _p, _u16)
_decl("sandlock_http_rule_error", _p, _cs)
# trace (_trace.py) and dynamic policy (_policy.py)
_decl("sandlock_sandbox_builder_on_decision", _p, _p, DECISION_FN, _p)
_decl("sandlock_sandbox_builder_report_filter_refusals", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_audit_denials", _p, _p, ctypes.c_bool)
_decl("sandlock_sandbox_builder_policy_callback", _p, _p, POLICY_FN, _p)
_decl("sandlock_policy_deny_path", ctypes.c_int32, _p, _cs)
_decl("sandlock_policy_allow_path", ctypes.c_int32, _p, _cs)
_decl("sandlock_policy_restrict_network", ctypes.c_int32, _p, ctypes.POINTER(_cs),
      ctypes.c_size_t)
_decl("sandlock_policy_grant_network", ctypes.c_int32, _p, ctypes.POINTER(_cs), ctypes.c_size_t)
_decl("sandlock_policy_kill", None, _p)
_decl("sandlock_ctx_restrict_max_memory", None, _p, _u64)
_decl("sandlock_ctx_restrict_max_processes", None, _p, _u32)
_decl("sandlock_ctx_restrict_pid_network", None, _p, _u32, ctypes.POINTER(_cs), _u32)
_decl("sandlock_sandbox_builder_free", None, _p)
_decl("sandlock_sandbox_build", _p, _p, _errp, _msgp)
_decl("sandlock_sandbox_free", None, _p)

# running
_decl("sandlock_run_err", _p, _p, ctypes.POINTER(_cs), ctypes.c_uint32, _errp, _msgp)
_decl(
    "sandlock_run_with_handlers_err", _p, _p, ctypes.POINTER(_cs), ctypes.c_uint32,
    ctypes.POINTER(Registration), ctypes.c_size_t, _errp, _msgp,
)

# handles
_decl(
    "sandlock_spawn", _p, _p, ctypes.POINTER(_cs), ctypes.c_uint32,
    ctypes.POINTER(Registration), ctypes.c_size_t, ctypes.POINTER(SpawnOpts), _errp, _msgp,
)
for _n in ("start", "pid", "init_pid", "pause", "resume", "kill",
           "stdin_fd", "stdout_fd", "stderr_fd"):
    _decl("sandlock_handle_" + _n, _int, _p)
_decl("sandlock_handle_is_running", ctypes.c_bool, _p)
_decl("sandlock_handle_cpu_time_ns", ctypes.c_int64, _p)
_decl("sandlock_handle_memory_bytes", ctypes.c_int64, _p)
_decl("sandlock_handle_ports", _int, _p, ctypes.POINTER(ctypes.c_uint16),
      ctypes.POINTER(ctypes.c_uint16), ctypes.c_size_t)
_decl("sandlock_handle_wait_ms", _p, _p, ctypes.c_int64, _errp, _msgp)
_decl("sandlock_handle_free", None, _p)

# results
_decl("sandlock_result_exit_code", _int, _p)
_decl("sandlock_result_reason", ctypes.c_uint32, _p)
_decl("sandlock_result_term_signal", _int, _p)
_decl("sandlock_result_killed_by_handler", ctypes.c_bool, _p)
_decl("sandlock_result_signal", _int, _p)
_decl("sandlock_result_success", ctypes.c_bool, _p)
_decl("sandlock_result_stdout_bytes", _p, _p, ctypes.POINTER(ctypes.c_size_t))
_decl("sandlock_result_stderr_bytes", _p, _p, ctypes.POINTER(ctypes.c_size_t))
_decl("sandlock_result_stdout_truncated", ctypes.c_uint64, _p)
_decl("sandlock_result_handlers_abandoned", ctypes.c_bool, _p)
_decl("sandlock_result_stderr_truncated", ctypes.c_uint64, _p)
_decl("sandlock_result_change_count", ctypes.c_size_t, _p, _b)
_decl("sandlock_result_change", _cs, _p, _b, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char))
_decl("sandlock_result_cow_kept", _cs, _p)
_decl("sandlock_result_cow_error", _cs, _p)
_decl("sandlock_result_error", _cs, _p)
_decl("sandlock_result_denied_access", _cs, _p, ctypes.POINTER(ctypes.c_char_p))
_decl("sandlock_result_free", None, _p)
_decl("sandlock_string_free", None, _p)

# handlers
# fn is declared as a plain pointer so that both HANDLER_FN and RAW_HANDLER_FN
# callbacks are accepted (c_void_p takes any ctypes function pointer).
_decl("sandlock_handler_new", _p, _p, _p, UD_FREE_FN, ctypes.c_uint32)
_decl("sandlock_handler_set_deferred", None, _p, ctypes.c_bool)
_decl("sandlock_handler_set_guard", None, _p, _p)
_decl("sandlock_handler_free", None, _p)

# action setters
_decl("sandlock_action_set_continue", None, _PA)
_decl("sandlock_action_set_errno", None, _PA, ctypes.c_int32)
_decl("sandlock_action_set_return_value", None, _PA, ctypes.c_int64)
_decl("sandlock_action_set_inject_fd_send", None, _PA, _int, ctypes.c_uint32)
_decl(
    "sandlock_action_set_inject_fd_send_tracked", None, _PA, _int, ctypes.c_uint32,
    ctypes.c_uint64,
)
_decl("sandlock_action_set_hold", None, _PA)
_decl("sandlock_action_set_kill", None, _PA, ctypes.c_int32, ctypes.c_int32)

_decl("sandlock_open_on_behalf", ctypes.c_int32, _p, ctypes.POINTER(Notif), OPEN_CHECK_FN, _p,
      ctypes.POINTER(Opened))

# fork mode (_fork.py)
_decl("sandlock_fork_start", _p, _p, _u32, ctypes.POINTER(ForkOpts), _errp, _msgp)
_decl("sandlock_fork_count", _u32, _p)
_decl("sandlock_fork_pid", ctypes.c_int32, _p, _u32)
_decl("sandlock_fork_kill", None, _p)
_decl("sandlock_fork_wait", _int, _p, ctypes.c_int64, _errp, _msgp)
_decl("sandlock_fork_result", _p, _p, _u32)
_decl("sandlock_fork_free", None, _p)
_decl("sandlock_fork_reduce", _p, _p, ctypes.POINTER(_cs), _u32, _p, _errp, _msgp)

# child memory
_decl("sandlock_mem_peek", ctypes.c_int32, _p, ctypes.c_uint64, _p, ctypes.c_size_t)
_decl("sandlock_mem_poke", ctypes.c_int32, _p, ctypes.c_uint64, _p, ctypes.c_size_t)
_decl("sandlock_mem_read_string", _p, _p, ctypes.c_uint64, ctypes.c_size_t)

# misc
_decl("sandlock_syscall_nr", ctypes.c_int64, _cs)
_decl("sandlock_syscall_name", _p, ctypes.c_int64)
_decl("sandlock_landlock_abi_version", _int)
_decl("sandlock_version", _cs)
# profiles (profile.py): the JSON text is heap memory, hence _p (take_string)
_decl("sandlock_profile_load", _p, _cs, _errp, _msgp)


def take_string(ptr: Ptr) -> Optional[bytes]:
    """Copy a heap char* returned by the library into bytes and free it."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr)
    finally:
        lib.sandlock_string_free(ptr)


def error_out() -> Tuple[ctypes.c_int, ctypes.c_void_p]:
    """Fresh (err, err_msg) out-parameters for a fallible call."""
    return ctypes.c_int(0), ctypes.c_void_p(None)


def syscall_nr(name: str) -> int:
    """Syscall number on the native arch, or -1 if unknown."""
    return int(lib.sandlock_syscall_nr(name.encode()))


def syscall_name(nr: int) -> Optional[str]:
    s = take_string(lib.sandlock_syscall_name(nr))
    return None if s is None else s.decode()


def thread_state_api() -> Optional[Tuple[Any, ...]]:
    """(PyGILState_Ensure, PyGILState_Release, PyGILState_GetThisThreadState,
    PyThreadState_Clear, PyThreadState_Delete) of this CPython, declared, for
    the thread-state pinning of _pin.py; None where one is missing."""
    api = ctypes.pythonapi
    try:
        fns = (api.PyGILState_Ensure, api.PyGILState_Release, api.PyGILState_GetThisThreadState,
               api.PyThreadState_Clear, api.PyThreadState_Delete)
    except AttributeError:
        return None
    protos: Tuple[Tuple[Any, List[Any]], ...] = ((ctypes.c_int, []), (None, [ctypes.c_int]), (ctypes.c_void_p, []),
              (None, [ctypes.c_void_p]), (None, [ctypes.c_void_p]))
    for fn, (res, args) in zip(fns, protos):
        fn.restype, fn.argtypes = res, args
    return fns


def guard_address() -> Optional[int]:
    """Address of Py_IsInitialized: the C side calls it (without the GIL)
    before entering a handler, so a call that arrives while the interpreter
    is finalizing never enters Python and goes through on_exception."""
    return ctypes.cast(ctypes.pythonapi.Py_IsInitialized, ctypes.c_void_p).value


# One source for the version: SANDLOCK_VERSION in include/sandlock.h, as the
# loaded library reports it (the package metadata is read from it too).
VERSION: str = lib.sandlock_version().decode()
