"""A run as an object: Sandbox.popen() -> Process, and the one process a
Sandbox itself can hold (spawn / create / start / wait / pause / resume /
kill).  Over the C handle API (sandlock_spawn, sandlock_handle_*).

Output of CAPTURE streams is collected by a thread of the C handle, so a
command never blocks on a full pipe while Python does something else;
PIPE streams are file objects the caller reads and writes itself.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import io
import threading
import time
import warnings
import weakref
from typing import IO, Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import _fields, _native
from ._checks import argv as _argv, timeout as _timeout
from ._result import ExitReason, Result, raise_from, take_fields
from ._run import NativeSandbox, Registrations, SandboxLike
from .exceptions import PolicyTypeError, PolicyValueError

# A stream given to popen(): None (the default), a StdioMode, an Fd or a
# file object with fileno().
Stream = Any

_lib = _native.lib

__all__ = ["Fd", "Process", "StdioMode", "Usage"]


class StdioMode(enum.IntEnum):
    """How one standard stream of a popen()ed command is connected.

    The values are the reference's (its C ``sandlock_popen`` takes them as
    ints): INHERIT=0, PIPED=1, NULL=2.  CAPTURE=3 is ours: the stream is
    collected into the Result of wait() (stdin: /dev/null).  PIPE and
    DEVNULL are older spellings of PIPED and NULL.  An int given for a
    stream is read as a mode, never as an fd: an fd is given as a file
    object with fileno() or as ``sandlock.Fd(n)``."""

    INHERIT = 0  # this process's own stream
    PIPED = 1    # a file object on the Process (stdin writable, others readable)
    NULL = 2     # /dev/null
    CAPTURE = 3  # collected into the Result of wait() (stdin: /dev/null)
    PIPE = 1     # alias of PIPED
    DEVNULL = 2  # alias of NULL


class Fd:
    """An fd to connect a popen() stream to (a plain int there is a
    StdioMode): the command gets a duplicate, the caller keeps its own."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
            raise PolicyValueError("Fd takes a non-negative int, got %r" % (fd,))
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def __repr__(self) -> str:
        return "Fd(%d)" % self.fd


_MODES = {
    StdioMode.PIPED: _native.STDIO_PIPE,
    StdioMode.INHERIT: _native.STDIO_INHERIT,
    StdioMode.NULL: _native.STDIO_DEVNULL,
    StdioMode.CAPTURE: _native.STDIO_CAPTURE,
}
_NAMES = ("stdin", "stdout", "stderr")


def _stdio(i: int, value: Stream, default: StdioMode) -> Tuple[int, int]:
    """(C mode, fd) for stream i; value None means default."""
    if value is None:
        value = default
    if isinstance(value, bool):
        raise PolicyTypeError("%s must be a StdioMode, an Fd or a file, not bool" % _NAMES[i])
    if isinstance(value, int):
        try:
            return _MODES[StdioMode(value)], -1
        except ValueError:
            raise PolicyValueError(
                "%s: %d is not a StdioMode (INHERIT=0, PIPED=1, NULL=2, CAPTURE=3); "
                "to connect an fd pass sandlock.Fd(%d) or a file object"
                % (_NAMES[i], value, value)) from None
    fileno = getattr(value, "fileno", None)
    if fileno is None:
        raise PolicyTypeError("%s must be a StdioMode, an Fd or a file with fileno(), got %r"
                              % (_NAMES[i], value))
    return _native.STDIO_FD, int(fileno())


def _pass_fds(fds: Iterable[object]) -> List[int]:
    out: List[int] = []
    for fd in fds:
        if isinstance(fd, bool) or not isinstance(fd, int):
            raise PolicyTypeError("pass_fds must be ints, got %r" % (fd,))
        out.append(fd)
    return out


def _native_with_env(sb: SandboxLike, timeout: Optional[float],
                     extra_env: Dict[str, str]) -> NativeSandbox:
    """A native sandbox for sb's configuration plus extra environment
    variables (uncached: used for a pipeline's consumer)."""
    snap = dict(sb._snapshot(_timeout("timeout", timeout)))
    env = dict(snap["env"])
    env.update(extra_env)
    snap["env"] = tuple(sorted(env.items()))
    key = tuple(sorted(snap.items()))
    return NativeSandbox(_fields.build(key), key)


def spawn(sb: SandboxLike, cmd: Iterable[str], stdin: Stream, stdout: Stream, stderr: Stream,
          handlers: Iterable[Tuple[object, Any]] = (), timeout: Optional[float] = None,
          pass_fds: Iterable[int] = (), create: bool = False,
          extra_env: Optional[Dict[str, str]] = None, fds_in_order: bool = False) -> Process:
    """Start cmd in sb; a Process.  Every stream defaults to INHERIT (the
    reference's popen defaults)."""
    argv = _argv(cmd)
    inh = StdioMode.INHERIT
    modes = [_stdio(0, stdin, inh), _stdio(1, stdout, inh), _stdio(2, stderr, inh)]
    keep = _pass_fds(pass_fds)
    hs = Registrations(sb._with_trace(handlers))
    nsb = _native_with_env(sb, timeout, extra_env) if extra_env else sb._native_for(timeout)
    opts = _native.SpawnOpts()
    opts.size = ctypes.sizeof(opts)
    opts.flags = (_native.SPAWN_CREATE if create else 0) | \
        (_native.SPAWN_PASS_IN_ORDER if fds_in_order else 0)
    for i, (mode, fd) in enumerate(modes):
        opts.stdio[i].mode = mode
        opts.stdio[i].fd = fd
    keep_arr = (ctypes.c_int32 * max(1, len(keep)))(*keep)
    opts.pass_fds = keep_arr
    opts.npass_fds = len(keep)
    try:
        hs.make()
        arr = (ctypes.c_char_p * len(argv))(*argv)
        err, msg = _native.error_out()
        # From here on the C side owns every handler, on every path.
        h = _lib.sandlock_spawn(nsb.ptr, arr, len(argv), hs.regs, hs.n, ctypes.byref(opts),
                                ctypes.byref(err), ctypes.byref(msg))
    except BaseException:
        hs.close()
        raise
    if not h:
        hs.close()
        raise_from(err, msg, "sandlock_spawn")  # e.g. "command not found: ..."
    return Process(h, nsb, hs, [m for m, _fd in modes])


class Process(_native.Closing):
    """A command running in a sandbox (from Sandbox.popen).

    ``stdin`` / ``stdout`` / ``stderr`` are file objects for the streams
    opened with StdioMode.PIPED (else None).  ``pid`` is the command's pid
    until wait() has returned (then None).  wait() closes a still-open
    piped stdin first (a command reading to EOF can end), and returns the
    Result (its stdout/stderr hold the CAPTURE streams only).  Used as a
    context manager, or when closed / collected, it ends the whole sandbox
    if still running: nothing of it outlives the Process (one collected
    while its command still ran warns with a ResourceWarning).  The thread that started it must outlive the run: the
    sandbox's init ends the sandbox when the thread that forked it exits
    (PR_SET_PDEATHSIG follows that thread).  ``init_pid`` is the sandbox's
    init (this process's child, the command's parent)."""

    def __init__(self, handle: _native.Ptr, nsb: NativeSandbox, regs: Registrations,
                 modes: List[int]) -> None:
        self._h = handle
        self._nsb = nsb    # the native policy must outlive the handle
        self._regs = regs  # handler references, released when the run is over
        self._lock = threading.Lock()
        self._result: Optional[Result] = None
        self._abandoned = True  # until the result says no handler thread was left
        self._owner: Optional[SandboxLike] = None  # the Sandbox that popen()ed it
        self._killed = False
        self._pid = int(_lib.sandlock_handle_pid(handle))
        self._cpu_mark = (0, time.monotonic())  # cpu_pct(): since the last call
        self.init_pid = int(_lib.sandlock_handle_init_pid(handle))
        self.stdin = self._pipe(_lib.sandlock_handle_stdin_fd, modes[0], "wb")
        self.stdout = self._pipe(_lib.sandlock_handle_stdout_fd, modes[1], "rb")
        self.stderr = self._pipe(_lib.sandlock_handle_stderr_fd, modes[2], "rb")

    def _pipe(self, take: Callable[[_native.Ptr], int], mode: int, how: str) -> Optional[IO[bytes]]:
        if mode != _native.STDIO_PIPE:
            return None
        fd = int(take(self._h))
        return io.open(fd, how) if fd >= 0 else None

    def __repr__(self) -> str:
        return "<sandlock.Process pid=%d %s>" % (
            self._pid, "running" if self.is_running else "ended")

    @property
    def pid(self) -> Optional[int]:
        """The command's pid until wait() has returned, then None."""
        return self._pid if self._result is None else None

    @property
    def is_running(self) -> bool:
        with self._lock:
            return bool(self._h) and bool(_lib.sandlock_handle_is_running(self._h))

    @property
    def returncode(self) -> Optional[int]:
        """The exit code once wait() has returned, else None."""
        return None if self._result is None else self._result.exit_code

    def ports(self) -> Dict[int, int]:
        """port_remap: {virtual port: real port} of the ports this run bound
        elsewhere than asked (a port not listed is its own real port)."""
        with self._lock:
            if not self._h:
                return {}
            n = 64
            while True:
                virt, real = (ctypes.c_uint16 * n)(), (ctypes.c_uint16 * n)()
                k = int(_lib.sandlock_handle_ports(self._h, virt, real, n))
                if k <= n:
                    return {virt[i]: real[i] for i in range(max(k, 0))}
                n = k

    def start(self) -> None:
        """Release a command made with create()."""
        with self._lock:
            if not self._h or _lib.sandlock_handle_start(self._h) != 0:
                raise RuntimeError("no created command waits to be started")

    def _signal(self, fn: Callable[[_native.Ptr], int], what: str) -> None:
        with self._lock:
            ok = bool(self._h) and fn(self._h) == 0
        if not ok:
            raise RuntimeError("cannot %s: the sandbox is not running" % what)

    def pause(self) -> None:
        """Stop every process of the sandbox."""
        self._signal(_lib.sandlock_handle_pause, "pause")

    def resume(self) -> None:
        """Continue every process of the sandbox."""
        self._signal(_lib.sandlock_handle_resume, "resume")

    def _usage(self, fn: Callable[[_native.Ptr], int], what: str) -> int:
        with self._lock:
            v = int(fn(self._h)) if self._h else -1
        if v < 0:
            raise RuntimeError("cannot read %s: the sandbox is not running" % what)
        return v

    def cpu_pct(self) -> float:
        """CPU use of the whole sandbox in percent of one core (above 100
        on several cores) since the previous cpu_pct() call, or since the
        start for the first one."""
        now_ns = self._usage(_lib.sandlock_handle_cpu_time_ns, "the CPU time")
        now_t = time.monotonic()
        ns, t = self._cpu_mark
        self._cpu_mark = (now_ns, now_t)
        wall = now_t - t
        return 0.0 if wall <= 0 else max(0.0, (now_ns - ns) / 1e9 / wall * 100.0)

    def memory_bytes(self) -> int:
        """Memory the sandbox uses now, in bytes: its memory cgroup's charge
        where max_memory made one, else the sum of its processes' RSS."""
        return self._usage(_lib.sandlock_handle_memory_bytes, "the memory use")

    def usage(self) -> Usage:
        """Live use of the whole sandbox: Usage(cpu_pct, memory_bytes), as
        cpu_pct() and memory_bytes() give them."""
        return Usage(cpu_pct=self.cpu_pct(), memory_bytes=self.memory_bytes())

    def kill(self) -> None:
        """End the whole sandbox (a no-op once it has ended)."""
        with self._lock:
            if self._h and _lib.sandlock_handle_kill(self._h) == 0:
                self._killed = True

    def poll(self) -> Optional[int]:
        """The exit code if the command has ended, else None."""
        res = self._wait(0)
        return None if res is None else res.exit_code

    def wait(self, timeout: Optional[float] = None) -> Result:
        """Wait for the end of the run and return its Result.  A still-open
        piped stdin is closed first, so a command reading to EOF ends.
        timeout in seconds (None: forever): when it expires the sandbox is
        killed and the Result is a failed one (reason TIMEOUT, "timed out"
        in its error), as the reference does; no exception."""
        if self.stdin is not None and not self.stdin.closed:
            try:
                self.stdin.close()
            except OSError:  # e.g. EPIPE flushing to a command that ended
                pass
        res = self._wait(timeout)
        if res is not None:
            return res
        self.kill()
        ended = self._wait(None)
        if ended is None or timeout is None:  # without a deadline _wait has one
            raise RuntimeError("the end of the run could not be read")
        with self._lock:
            self._result = dataclasses.replace(
                ended, success=False, reason=ExitReason.TIMEOUT, exit_code=124, signal=-1,
                killed_by_handler=False, error="timed out after %gs" % timeout)
            return self._result

    def _wait(self, timeout: Optional[float]) -> Optional[Result]:
        """The Result, or None if the command still runs after timeout."""
        with self._lock:
            if self._result is not None:
                return self._result
            if not self._h:
                raise RuntimeError("the Process was closed before it was waited for")
            h = self._h
        # Slices keep Ctrl-C working; the C call releases the GIL.
        deadline = None if timeout is None else _now() + max(0.0, timeout)
        while True:
            left = 0.2 if deadline is None else min(0.2, max(0.0, deadline - _now()))
            err, msg = _native.error_out()
            r = _lib.sandlock_handle_wait_ms(h, int(left * 1000), ctypes.byref(err),
                                          ctypes.byref(msg))
            if r:
                break
            text = _native.take_string(msg.value)
            if err.value != _native.ERR_RUNNING:
                raise RuntimeError("waiting failed: %s" % (text or b"").decode(errors="replace"))
            if deadline is not None and _now() >= deadline:
                return None
        self._abandoned = bool(_lib.sandlock_result_handlers_abandoned(r))
        res, branch = take_fields(r, False)
        if self._killed:  # our kill, not a handler's
            res = dataclasses.replace(res, killed_by_handler=False)
        with self._lock:
            self._result = res
        self._free_handle()
        _release(self)
        branch.raise_if_failed(res)  # a workdir commit left changes out
        return res

    def communicate(self, input: Optional[bytes] = None, timeout: Optional[float] = None
                    ) -> Tuple[Optional[bytes], Optional[bytes]]:
        """Write input to stdin (then close it), read stdout and stderr
        pipes to their end, all at the same time (no deadlock whatever the
        sizes), wait, and return (stdout, stderr) (None for a stream that
        is not a PIPE)."""
        got: Dict[str, bytes] = {}

        def reader(name: str, f: IO[bytes]) -> None:
            got[name] = f.read()

        threads = [threading.Thread(target=reader, args=(n, f), daemon=True)
                   for n, f in (("out", self.stdout), ("err", self.stderr)) if f is not None]
        for t in threads:
            t.start()
        if self.stdin is not None:
            try:
                if input:
                    self.stdin.write(input)
                self.stdin.close()
            except BrokenPipeError:
                pass
        for t in threads:
            t.join(timeout)
        self.wait(timeout)
        return got.get("out"), got.get("err")

    def _free_handle(self) -> None:
        with self._lock:
            h, self._h = self._h, None
        if h:
            _lib.sandlock_handle_free(h)  # ends the sandbox if it still runs
            # Unless the result said no handler thread was left running,
            # keep their thread states (the run's end may be unknown).
            self._regs.close(self._abandoned)

    def close(self) -> None:
        """End the sandbox if still running, free it, close the pipes."""
        if self._h and self._result is None:
            self.kill()
        self._free_handle()
        _release(self)
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                try:
                    f.close()
                except (OSError, ValueError):
                    pass


    def __del__(self) -> None:
        try:
            if getattr(self, "_h", None) and self._result is None:
                warnings.warn("sandlock.Process %d was not waited for: its sandbox is "
                              "killed now (use wait() or a with block)" % self._pid,
                              ResourceWarning, stacklevel=2)
            self.close()
        except Exception:
            pass


@dataclasses.dataclass(frozen=True)
class Usage:
    """Live use of a running sandbox (Sandbox.usage(), Process.usage()):
    CPU in percent of one core since the previous reading, and memory in
    bytes now (the memory cgroup's charge, else the sum of the RSS)."""

    cpu_pct: float
    memory_bytes: int


def _now() -> float:
    return time.monotonic()


# ---- the one process a Sandbox holds (spawn / create / wait ...) ----

_attach_lock = threading.Lock()


def running(sb: SandboxLike) -> Optional[Process]:
    """The process sb runs now (spawn/create or popen), else None."""
    for p in (sb.__dict__.get("_proc"), _popened(sb)):
        if p is not None and p.is_running:
            return p
    return None


def _popened(sb: SandboxLike) -> Optional[Process]:
    ref = sb.__dict__.get("_popen")
    p: Optional[Process] = ref() if ref is not None else None
    return p


def _release(proc: Process) -> None:
    """proc has ended: the Sandbox that popen()ed it is free again."""
    sb, proc._owner = proc._owner, None
    if sb is not None and _popened(sb) is proc:
        sb.__dict__.pop("_popen", None)


def _check_idle(sb: SandboxLike) -> None:
    if running(sb) is not None:
        raise RuntimeError("sandbox is already running a process: a Sandbox runs one at a "
                           "time (wait() for it or kill() it, or use another Sandbox)")


def popen(sb: SandboxLike, cmd: Iterable[str], stdin: Stream, stdout: Stream, stderr: Stream,
          handlers: Iterable[Tuple[object, Any]], timeout: Optional[float],
          pass_fds: Iterable[int]) -> Process:
    with _attach_lock:
        _check_idle(sb)
        p = spawn(sb, cmd, stdin, stdout, stderr, handlers, timeout, pass_fds)
        # The Sandbox only marks itself busy (weakly): a dropped Process is
        # still collected, and its __del__ ends the run.
        sb.__dict__["_popen"] = weakref.ref(p)
        p._owner = sb
    return p


def attach(sb: SandboxLike, cmd: Iterable[str], timeout: Optional[float], create: bool) -> None:
    with _attach_lock:
        _check_idle(sb)
        old = sb.__dict__.get("_proc")
        cap = StdioMode.CAPTURE
        sb.__dict__["_proc"] = spawn(sb, cmd, StdioMode.DEVNULL, cap, cap, timeout=timeout,
                                     create=create)
    if old is not None:
        old.close()


def current(sb: SandboxLike, what: str) -> Process:
    p: Optional[Process] = sb.__dict__.get("_proc")
    if p is None:
        if what == "start":
            raise RuntimeError("sandbox has not been created (call create() first)")
        raise RuntimeError("cannot %s: this Sandbox has no process (spawn() one)" % what)
    return p


def detach(sb: SandboxLike, kill: bool = False) -> None:
    with _attach_lock:
        p = sb.__dict__.pop("_proc", None)
    if p is not None and kill:
        p.close()
