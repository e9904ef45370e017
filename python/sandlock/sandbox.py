"""sandlock.sandbox: the Sandbox class (a reusable configuration and its
runs), confine() and the host queries; the module name the reference SDK
uses (``from sandlock.sandbox import Sandbox``).  Its fields are declared
in _fields.py's table.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import datetime
import fractions
import inspect
import os
import threading
from collections.abc import Iterable as _IterableABC
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Literal, Mapping,
                    Optional, Sequence, Tuple, Union)

from . import _checks as ck
from . import _fields, _fork, _knobs, _native, _process, _trace
from ._checks import parse_memory_size, parse_ports
from ._fork import ForkResult
from ._pipeline import Stage
from ._cow import BranchAction, Change
from ._native import Cfg, Ptr
from ._process import Stream
from ._process import Fd, Process, StdioMode, Usage
from ._knobs import Protection, ProtectionStatus
from ._result import DryRunResult, ExitReason, Result, run_failure, take_result
from ._run import NativeSandbox, Registrations, Snapshot
from .exceptions import BranchError, ConfinementError, PolicyTypeError, PolicyValueError
from .handler import Handler

__all__ = ["BranchAction", "Change", "DryRunResult", "ExitReason", "Fd", "Process", "Protection",
           "Result", "Sandbox", "StdioMode", "Usage", "parse_memory_size", "parse_ports"]

_lib = _native.lib

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
    raised into the run.  ``audit_denials=True`` gives a failed run's
    ``Result.denied_access``: the first access Landlock refused it, as
    ``(what, path)``, e.g. ``("fs.read_file", "/etc/x")``, read from the
    kernel's audit log where the caller may (root with audit enabled;
    elsewhere None, never an error: docs/cli.md).

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
    its contents when the run ends; ``XDG_CACHE_HOME`` and
    ``npm_config_cache`` point into it unless ``env`` sets them.

    ``port_remap=True`` gives the sandbox its own TCP port space: binds
    are performed by the supervisor, on another real port when the asked
    one is taken; the guest sees its own ports, and ``ports()`` returns
    the {virtual: real} map while it runs.  ``net_host_interfaces=True``
    shows the guest the host's network interfaces through route netlink
    (by default, where sandlock may make one, a loopback-only view).
    ``chroot`` (a directory) is
    the guest's ``/`` (docs: "Virtual chroot"), with ``fs_mount``
    ({virtual path: host dir}, read-write) and ``fs_mount_ro`` (the same,
    read-only: writes fail with EROFS) showing host directories inside it;
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


    if TYPE_CHECKING:
        # The field attributes are installed from _fields.FIELDS below the
        # class: to a type checker each is any value.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(
        self,
        *,
        fs_readable: Iterable[Any] = (),
        fs_writable: Iterable[Any] = (),
        fs_denied: Iterable[Any] = (),
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        env: Optional[Mapping[str, str]] = None,
        clean_env: bool = False,
        max_processes: Optional[int] = _knobs.DEFAULT_MAX_PROCESSES,
        max_memory: Optional[Union[int, str]] = None,
        net_allow: Iterable[Any] = (),
        net_allow_bind: Iterable[Any] = (),
        timeout: Optional[float] = None,
        name: Optional[str] = None,
        random_seed: Optional[int] = None,
        time_start: Optional[Union[int, float, fractions.Fraction, str,
                                   datetime.datetime]] = None,
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
        net_deny_bind: Iterable[Any] = (),
        net_allow_unix: Iterable[Any] = (),
        net_unix_readable: bool = False,
        port_remap: bool = False,
        net_host_interfaces: bool = False,
        tmp: bool = False,
        max_output: Optional[int] = None,
        trace: Optional[Callable[[Dict[str, Any]], None]] = None,
        audit_denials: bool = False,
        num_cpus: Optional[int] = None,
        deterministic_dirs: bool = False,
        init_fn: Optional[Callable[[], object]] = None,
        work_fn: Optional[Callable[[int], object]] = None,
        workdir: Optional[Union[str, "os.PathLike[str]"]] = None,
        fs_storage: Optional[Union[str, "os.PathLike[str]"]] = None,
        on_exit: Union[BranchAction, str] = BranchAction.COMMIT,
        on_error: Union[BranchAction, str] = BranchAction.ABORT,
        max_disk: Optional[Union[int, str]] = None,
        policy_fn: Optional[Callable[..., object]] = None,
        chroot: Optional[Union[str, "os.PathLike[str]"]] = None,
        image: Optional[str] = None,
        fs_mount: Optional[Dict[str, str]] = None,
        fs_mount_ro: Optional[Dict[str, str]] = None,
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
        self._cfg: Cfg = {}
        self._given: Dict[str, Any] = {}
        self._lock = threading.Lock()
        # snapshot -> NativeSandbox
        self._natives: "collections.OrderedDict[Snapshot, NativeSandbox]" = \
            collections.OrderedDict()
        # Every field through its attribute (validated there), in the
        # order of the signature (the table's); init_fn and work_fn are
        # runtime arguments of fork(), not configuration (never in a
        # snapshot).
        given = locals()
        for f in _fields.FIELDS:
            setattr(self, f.name, given[f.name])
        self.init_fn = ck.callable_check("init_fn", init_fn)
        self.work_fn = ck.callable_check("work_fn", work_fn)
        # Build once now so a bad configuration fails here, not at run().
        # Hostnames are resolved at run, as the reference does (a Sandbox
        # can be made offline): with one in net_allow, the check builds a
        # copy whose hostnames are a documentation address instead.
        if any(map(ck.names_a_host, self._cfg["net_allow"])):
            offline = {"net_allow": tuple(map(ck.offline_rule, self._cfg["net_allow"]))}
            _lib.sandlock_sandbox_free(Sandbox._build(self._snapshot(None, offline)))
        else:
            self._native_for(None)

    def __eq__(self, other: object) -> bool:
        """Same configuration and runtime callables (as the reference's
        dataclass compares its fields)."""
        if not isinstance(other, Sandbox):
            return NotImplemented
        return self._comparable() == other._comparable()

    # Mutable and compared by value: unhashable, like the reference's (mypy
    # cannot express a class without __hash__).
    __hash__ = None  # type: ignore[assignment]

    def _comparable(self) -> Tuple[Dict[str, Any], Any, Any]:
        return _fields.compared(self._cfg, self._given), self.init_fn, self.work_fn

    def __repr__(self) -> str:
        """The fields set to other than their default, as keywords."""
        values = ((f.name, getattr(self, f.name)) for f in _fields.FIELDS)
        return "Sandbox(%s)" % ", ".join(
            "%s=%r" % (n, v) for n, v in values if v != _DEFAULTS[n])

    def _snapshot(self, timeout: Optional[float], overrides: Optional[Cfg] = None) -> Snapshot:
        return _fields.snapshot(self._cfg, timeout, overrides)

    @staticmethod
    def _build(snap: Snapshot) -> Ptr:
        return _fields.build(snap)

    def _native_for(self, timeout: Optional[float],
                    overrides: Optional[Cfg] = None) -> NativeSandbox:
        """The native sandbox for the current configuration (and this
        timeout override): cached, rebuilt only when the snapshot changed.
        The caller keeps the returned object alive for its run; an entry
        evicted meanwhile is freed when the last run using it drops it."""
        key = self._snapshot(ck.timeout("timeout", timeout), overrides)
        with self._lock:
            nsb = self._natives.get(key)
            if nsb is not None:
                self._natives.move_to_end(key)
                return nsb
        nsb = NativeSandbox(self._build(key), key)  # outside the lock: resolves paths
        with self._lock:
            self._natives[key] = nsb
            while len(self._natives) > _CACHE_SIZE:
                self._natives.popitem(last=False)
        return nsb

    def _with_trace(self, handlers: Any) -> Any:
        """handlers plus, with trace=, the handler that reports refused
        file accesses (last: user handlers decide first)."""
        t = self._cfg.get("trace")
        if t is None or isinstance(handlers, (str, bytes)) or \
                not isinstance(handlers, _IterableABC):
            return handlers  # Registrations reports a bad list
        return list(handlers) + _trace.handlers(t, self._cfg)

    def active_protections(self) -> Dict[Protection, ProtectionStatus]:
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
        argv = ck.argv(cmd) if (cmd or self.image is None) else ()
        nsb = self._native_for(timeout)
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        r = _lib.sandlock_run_err(nsb.ptr, arr, len(argv), ctypes.byref(err), ctypes.byref(msg))
        if not r:
            return run_failure(err, msg, "sandlock_run")
        return take_result(r)

    def dry_run(self, cmd: Sequence[str], timeout: Optional[float] = None) -> DryRunResult:
        """Run cmd with the workdir's writes staged, then throw them away
        (on_exit and on_error are ABORT for this run): ``changes`` lists
        what the run would have changed (A/M/D, paths relative to
        workdir).  The real workdir is left as it was.  PolicyValueError
        if the sandbox has no workdir."""
        if self.workdir is None:
            raise PolicyValueError("dry_run needs a workdir (Sandbox(workdir=...))")
        argv = ck.argv(cmd)
        abort = {"on_exit": BranchAction.ABORT, "on_error": BranchAction.ABORT}
        nsb = self._native_for(timeout, abort)
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        r = _lib.sandlock_run_err(nsb.ptr, arr, len(argv), ctypes.byref(err), ctypes.byref(msg))
        if not r:
            res = run_failure(err, msg, "sandlock_run")
            return DryRunResult(**dict(dataclasses.asdict(res), changes=[]))
        res = take_result(r, dry_run=True)
        assert isinstance(res, DryRunResult)  # take_result's dry_run
        return res

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
        argv = ck.argv(cmd)
        hs = Registrations(self._with_trace(handlers))
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
                return run_failure(err, msg, "sandlock_run_with_handlers_err")
            abandoned = bool(_lib.sandlock_result_handlers_abandoned(r))
            return take_result(r)
        finally:
            hs.close(abandoned)  # the run is over (its deferred workers too)

    # ---- a run as an object (python/sandlock/_process.py) ----

    def popen(self, cmd: Sequence[str], stdin: Stream = None, stdout: Stream = None,
              stderr: Stream = None, handlers: Iterable[Tuple[object, Handler]] = (),
              timeout: Optional[float] = None, pass_fds: Iterable[int] = ()) -> Process:
        """Start cmd and return a Process at once; see sandlock.Process.

        stdin/stdout/stderr: a StdioMode (PIPE: a file object on the
        Process; INHERIT; DEVNULL; CAPTURE: collected into the Result of
        wait()), an int fd or a file object with fileno().  Defaults:
        stdin DEVNULL, stdout PIPE, stderr CAPTURE.  ``handlers`` as for
        run_with_handlers; ``pass_fds`` are fds (> 2) the command keeps."""
        return _process.popen(self, cmd, stdin, stdout, stderr, handlers, timeout, pass_fds)

    def spawn(self, cmd: Sequence[str], timeout: Optional[float] = None) -> None:
        """Start cmd without waiting (output is captured for wait()).  One
        process at a time per Sandbox: RuntimeError if one is running."""
        _process.attach(self, cmd, timeout, create=False)

    def create(self, cmd: Sequence[str], timeout: Optional[float] = None) -> None:
        """Launch cmd confined but parked before execve; start() releases
        it.  ``pid`` is known at once.  RuntimeError if one is running."""
        _process.attach(self, cmd, timeout, create=True)

    def start(self) -> None:
        """Release the create()d command.  RuntimeError if there is none."""
        _process.current(self, "start").start()

    def wait(self, timeout: Optional[float] = None) -> Result:
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

    def ports(self) -> Dict[int, int]:
        """With ``port_remap=True``: ``{virtual port: real port}`` for the ports
        the running command bound on another real port than it asked for
        (a port not listed is its own real port).  {} when nothing runs."""
        p: Optional[Process] = getattr(self, "_proc", None)
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
        n: Optional[int] = self._cfg["max_memory"]
        return n

    def cpu_pct(self) -> Optional[int]:
        """max_cpu as a percentage of one core, or None when unset (the
        reference's config helper; live use is usage())."""
        n: Optional[int] = self._cfg["max_cpu"]
        return n

    def kill(self) -> None:
        """End the whole sandbox at once; wait() then reports KILLED.
        RuntimeError if it is not running."""
        p = _process.current(self, "kill")
        if not p.is_running:
            raise RuntimeError("cannot kill: the sandbox is not running")
        p.kill()

    def run_interactive(self, cmd: Sequence[str], timeout: Optional[float] = None) -> int:
        """Run cmd with this process's stdin, stdout and stderr (a terminal
        is handed over for the run) and return its exit code."""
        inh = StdioMode.INHERIT
        with self.popen(cmd, stdin=inh, stdout=inh, stderr=inh, timeout=timeout) as p:
            return p.wait().exit_code

    def cmd(self, args: Sequence[str]) -> Stage:
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
        return _fork.start(self, n, self.init_fn, self.work_fn)

    def reduce(self, cmd: Sequence[str], clones: "ForkResult",
               timeout: Optional[float] = None) -> Result:
        """Run cmd in this sandbox with the stdout of every clone of
        ``clones`` (a ForkResult, waited for here), in clone-id order, on
        its stdin; return cmd's Result."""
        return _fork.reduce(self, cmd, clones, timeout)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        """Ends whatever this Sandbox still runs (spawn/create)."""
        _process.detach(self, kill=True)
        return False


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

def landlock_abi_version() -> int:
    """Landlock ABI of the running kernel, or -1 when unavailable."""
    return int(_lib.sandlock_landlock_abi_version())


_fields.install(Sandbox)
# The fields' defaults as read back (repr shows the fields that differ).
_DEFAULTS = _fields.defaults({n: p.default for n, p in
                              inspect.signature(Sandbox.__init__).parameters.items()})
