"""COW fork mode: ``Sandbox(init_fn=, work_fn=).fork(n)`` and ``reduce``.

Three kinds of process, all forks of the caller (like multiprocessing's
fork start method, so init_fn and work_fn may be any Python callables):

- the **keeper** (K), a child of the caller, stays outside the sandbox.
  It is a child subreaper, so every process of the fork ends up its
  child when its parent dies; it reaps the clones, reports their wait
  statuses to the caller, enforces the timeout and, once every clone has
  exited (or on a timeout, or when the caller asks or dies: its control
  pipe hangs up), kills whatever is left.  Being outside the Landlock
  domain it cannot be signalled by anything the clones do.
- the **template** (T), a child of K, confines itself with the sandbox's
  Landlock ruleset and seccomp blocklist (sandlock_confine), runs init_fn
  once, then forks the n clones and exits.  Its memory is what the
  clones share copy-on-write.
- the **clones**, children of T (then of K), inherit T's confinement.
  Clone i runs work_fn(i) with CLONE_ID=i in its environment and its
  stdout on a pipe of its own, whose read end T hands to the caller over
  a socket (SCM_RIGHTS): no clone holds another clone's pipe.

No supervisor runs for a fork, so the settings sandlock.confine() refuses
are refused here too (except cwd, env, clean_env and timeout, which the
template and the keeper apply), and clones are not counted in
max_processes.
"""

import array
import ctypes
import errno
import io
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from typing import List, Optional

from . import _knobs, _native
from .exceptions import ConfinementError, ForkError, PolicyTypeError, PolicyValueError

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_CHILD_SUBREAPER = 36
_CMSG_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0x40000000)  # received fds: close-on-exec

_REC = struct.Struct("=iii")       # keeper -> caller: pid, wait status, how it ended
_HOW_OWN, _HOW_TIMEOUT, _HOW_KILLED = 0, 1, 2
_PID = struct.Struct("=i")         # template -> keeper: one clone pid
_BATCH = 64                        # fds per SCM_RIGHTS message (kernel max 253)
_TEMPLATE_PID = -1                 # record pid for the template's own end
_END_PID = 0                       # record: the fork's whole tree is gone

# Caller-side fds of live forks: a new keeper closes them, so no fork's
# processes keep another fork's control pipe (or clone pipes) open.
_live_fds = set()
_live_lock = threading.Lock()   # held across the keeper's fork: see _launch


def _forget_live():
    """In any forked child: the parent's registry means nothing there, and
    its lock may have been copied held (a fork() from inside a clone must
    not deadlock on it)."""
    global _live_lock
    _live_lock = threading.Lock()
    _live_fds.clear()


os.register_at_fork(after_in_child=_forget_live)

# Settings the template and keeper apply themselves (not sandlock_confine).
_APPLIED_HERE = (("cwd", None), ("env", ()), ("clean_env", False), ("timeout", None))
_CLEAN_ENV_KEEP = ("PATH", "HOME", "USER", "TERM", "LANG")


def _confine_snapshot(sb):
    """(config dict for sandlock_confine, the settings applied here)."""
    cfg = dict(sb._snapshot(None))
    here = {k: cfg.get(k, d) for k, d in _APPLIED_HERE}
    for k, d in _APPLIED_HERE:
        cfg[k] = d
    refused = _knobs.confine_refusal(cfg)
    if refused:
        raise PolicyValueError("fork: %s cannot be applied to fork clones (no supervisor "
                               "runs for a fork)" % refused)
    cfg["_confine"] = True
    return cfg, here


def _clone_count(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise PolicyTypeError("fork: n must be an int, not %s" % type(n).__name__)
    if n < 1:
        raise PolicyValueError("fork: n must be at least 1, got %d" % n)
    return n


def _room_for_fds(n):
    """Raise this process's soft RLIMIT_NOFILE when n clone pipes would not
    fit under it; PolicyValueError when even the hard limit is too low."""
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:   # no /proc (inside a sandbox): a guess, checked on receipt
        used = 64
    need = n + 64 + used
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise PolicyValueError("fork: %d clones need %d open files, RLIMIT_NOFILE allows "
                                   "%d" % (n, need, hard))
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def start(sb, n, init_fn, work_fn) -> "ForkResult":
    n = _clone_count(n)
    if work_fn is None:
        raise PolicyValueError("fork: the Sandbox has no work_fn")
    cfg, here = _confine_snapshot(sb)
    _room_for_fds(n)
    ptr = sb._build(tuple(sorted(cfg.items())))  # in the caller: bad settings raise here
    env = _template_env(here)
    cap = sb.max_output
    _flush_std()  # or the template would write this process's buffered output again
    try:
        fr = _launch(n, ptr, here["cwd"], env, init_fn, work_fn, here["timeout"])
    finally:
        _lib_free(ptr)
    fr._cap = 64 << 20 if cap is None else cap
    fr._receive()
    return fr


def _lib_free(ptr):
    _native.lib.sandlock_sandbox_free(ptr)


def _template_env(here):
    """The environment the template (so every clone) runs with."""
    if here["clean_env"]:
        env = {k: os.environ[k] for k in _CLEAN_ENV_KEEP if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    else:
        env = dict(os.environ)
    env.update(dict(here["env"]))
    return env


def _launch(n, ptr, cwd, env, init_fn, work_fn, timeout):
    with _live_lock:
        cr, cw = os.pipe()            # caller -> keeper: b"k" or hang-up = end it all
        rr, rw = os.pipe()            # keeper -> caller: _REC records
        pr, pw = os.pipe()            # template -> keeper: clone pids
        s_caller, s_tmpl = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        others = list(_live_fds)
        try:
            kpid = os.fork()
        except BaseException:
            for fd in (cr, cw, rr, rw, pr, pw):
                os.close(fd)
            s_caller.close()
            s_tmpl.close()
            raise
        if kpid == 0:
            _keeper_main(others, (cw, rr, s_caller.fileno()), cr, rw, pr, pw, s_tmpl,
                         ptr, cwd, env, init_fn, work_fn, n, timeout)
        for fd in (cr, rw, pr, pw):
            os.close(fd)
        s_tmpl.close()
        fr = ForkResult(n, kpid, cw, rr, s_caller)
        _live_fds.update((cw, rr, s_caller.fileno()))
    return fr


# ---------------------------------------------------------------- keeper

def _keeper_main(others, callers, cr, rw, pr, pw, s_tmpl, ptr, cwd, env, init_fn, work_fn,
                 n, timeout):
    """The keeper's whole life; never returns."""
    code = 1
    try:
        mine = {cr, rw, pr, pw, s_tmpl.fileno()}
        for fd in set(others).union(callers) - mine:
            try:
                os.close(fd)
            except OSError:
                pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides, not ^C
        for sig in (signal.SIGTERM, signal.SIGHUP):   # end the fork, then go
            signal.signal(sig, _exit_on_signal)
        if _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
        tpid = os.fork()
        if tpid == 0:
            os.close(cr)
            os.close(rw)
            os.close(pr)
            _template_main(s_tmpl, pw, ptr, cwd, env, init_fn, work_fn, n)
        os.close(pw)
        s_tmpl.close()
        _Keeper(cr, rw, pr, tpid, timeout).run()
        code = 0
    except BaseException as e:
        if not isinstance(e, SystemExit):
            traceback.print_exc()
        _kill_tree()  # whatever went wrong, the clones do not outlive the keeper
    finally:
        os._exit(code)


def _exit_on_signal(sig, frame):
    raise SystemExit(128 + sig)


class _Keeper:
    def __init__(self, cr, rw, pr, tpid, timeout):
        self.cr, self.rw, self.pr, self.tpid = cr, rw, pr, tpid
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.clones = set()      # reported by the template, not yet reaped
        self.early = {}          # reaped before the template named them
        self.tmpl_done = False
        self.pids_eof = False
        self.out = bytearray()   # records not yet written to the caller
        self.how = _HOW_OWN      # what ends the rest once we kill
        self.pidbuf = b""

    def run(self):
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            signal.signal(signal.SIGCHLD, lambda *_: None)
            signal.set_wakeup_fd(wake_w)
            tick = None
        except ValueError:        # not the main thread: poll instead
            tick = 0.005
        os.set_blocking(self.rw, False)
        while not (self.pids_eof and self.tmpl_done and not self.clones):
            self.reap()
            wait = tick
            if self.deadline is not None and self.how == _HOW_OWN:
                left = max(0.0, self.deadline - time.monotonic())
                wait = left if wait is None else min(wait, left)
            # poll, not select: the caller may hold fds above FD_SETSIZE.
            p = select.poll()
            for fd in [self.cr, wake_r] + ([] if self.pids_eof else [self.pr]):
                p.register(fd, select.POLLIN)
            if self.out:
                p.register(self.rw, select.POLLOUT)
            ready = dict(p.poll(None if wait is None else int(wait * 1000) + 1))
            if wake_r in ready:
                _drain(wake_r)
            if self.pr in ready:
                self.read_pids()
            if self.rw in ready:
                self.flush(block=False)
            if self.cr in ready:
                self.kill_all(_HOW_KILLED)
            if (self.deadline is not None and self.how == _HOW_OWN
                    and time.monotonic() >= self.deadline):
                self.kill_all(_HOW_TIMEOUT)
        # Every clone has ended: nothing they started outlives the fork.
        _kill_tree()
        self.reap_all()
        self.out += _REC.pack(_END_PID, 0, self.how)
        os.set_blocking(self.rw, True)
        self.flush(block=True)

    def record(self, pid, status):
        self.out += _REC.pack(pid, status, self.how)

    def reaped(self, pid, status):
        if pid == self.tpid:
            self.tmpl_done = True
            self.record(_TEMPLATE_PID, status)
        elif pid in self.clones:
            self.clones.discard(pid)
            self.record(pid, status)
        else:
            self.early[pid] = status

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                if not self.pids_eof:      # nobody can write the pipe any more
                    self.read_pids()
                return
            if pid == 0:
                return
            self.reaped(pid, status)

    def reap_all(self):
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return
            self.reaped(pid, status)

    def read_pids(self):
        data = os.read(self.pr, 65536)
        if not data:
            self.pids_eof = True
            os.close(self.pr)
            return
        self.pidbuf += data
        whole = len(self.pidbuf) - len(self.pidbuf) % _PID.size
        for (pid,) in _PID.iter_unpack(self.pidbuf[:whole]):
            if pid in self.early:
                self.record(pid, self.early.pop(pid))
            else:
                self.clones.add(pid)
        self.pidbuf = self.pidbuf[whole:]

    def flush(self, block):
        while self.out:
            try:
                k = os.write(self.rw, self.out)
            except BlockingIOError:
                if not block:
                    return
                continue
            except BrokenPipeError:   # the caller is gone: nobody to tell
                self.out.clear()
                return
            del self.out[:k]

    def kill_all(self, how):
        if self.how == _HOW_OWN:
            self.how = how
        _kill_tree()
        # Killed processes become ours as their parents die: keep reaping
        # until the template and every clone are accounted for.
        while not (self.tmpl_done and not self.clones):
            if not self.pids_eof:
                self.read_pids()
                continue
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            self.reaped(pid, status)
            _kill_tree()


def _drain(fd):
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _children(pid):
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def _kill_tree():
    """SIGKILL every descendant of this process (the keeper, a subreaper:
    orphans of the fork are its children, so the walk finds them all),
    repeated until a round finds no new one (a process forked during a
    round is found by the next).  No killpg: once the group is empty its
    number may belong to someone else."""
    seen = set()
    while True:
        todo, found = [os.getpid()], []
        while todo:
            for c in _children(todo.pop()):
                found.append(c)
                todo.append(c)
        fresh = [p for p in found if p not in seen]
        if not fresh:
            return
        for p in fresh:
            seen.add(p)
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


# -------------------------------------------------------------- template

def _template_main(sock, pw, ptr, cwd, env, init_fn, work_fn, n):
    """Confine, run init_fn, fork the clones; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        # stdin at EOF: a pipe with no writer (no path needed, unlike
        # /dev/null, which a fork from inside a sandbox may not open).
        r, w = os.pipe()
        os.close(w)
        os.dup2(r, 0)
        os.close(r)
        if cwd is not None:
            os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        failed = _knobs.confine_native(ptr)
        if failed:
            text = _native.take_string(failed[1].value)
            _send_error(sock, b"C", failed[0].value, text or b"confine failed")
            os._exit(1)
        try:
            if init_fn is not None:
                init_fn()
        except BaseException:
            _send_error(sock, b"I", 0, traceback.format_exc().encode(errors="replace"))
            os._exit(1)
        _flush_std()
        _fork_clones(sock, pw, work_fn, n)
        code = 0
    except BaseException:
        _send_error(sock, b"T", 0, traceback.format_exc().encode(errors="replace"))
    finally:
        os._exit(code)


def _flush_std():
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except Exception:
            pass


def _send_error(sock, kind, num, text):
    try:
        sock.sendall(b"E" + kind + struct.pack("=i", num) + text[:60000])
    except OSError:
        pass


def _fork_clones(sock, pw, work_fn, n):
    pids, fds = [], []
    for i in range(n):
        try:
            r, w = os.pipe()
        except OSError as e:   # a small max_open_files: hand over what we hold
            if e.errno != errno.EMFILE or not fds:
                raise
            _send_batch(sock, pw, pids, fds)
            r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _clone_main(i, r, w, sock, pw, fds, work_fn)
        os.close(w)
        pids.append(pid)
        fds.append(r)
        if len(fds) == _BATCH or i == n - 1:
            _send_batch(sock, pw, pids, fds)


def _send_batch(sock, pw, pids, fds):
    """Name the clones to the keeper first (so it knows a clone before it
    can reap it), then send their pids and pipes to the caller."""
    os.write(pw, b"".join(_PID.pack(p) for p in pids))
    sock.sendmsg([b"P" + array.array("i", pids).tobytes()],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    for fd in fds:
        os.close(fd)
    del pids[:], fds[:]


def _clone_main(i, r, w, sock, pw, batch_fds, work_fn):
    """Clone i: stdout on its own pipe, run work_fn(i); never returns."""
    code = 1
    try:
        os.close(r)
        os.dup2(w, 1)
        os.close(w)
        for fd in batch_fds:     # earlier clones' read ends not yet sent
            os.close(fd)
        os.close(pw)
        sock.close()
        os.environ["CLONE_ID"] = str(i)
        # Whatever sys.stdout was in the caller (a test's capture, say),
        # print() in the clone goes to the clone's pipe.
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False),
                                      encoding=getattr(sys.__stdout__, "encoding", None)
                                      or "utf-8", errors="backslashreplace")
        code = 0
        try:
            work_fn(i)
        except SystemExit as e:
            code = _exit_code(e.code)
        except BaseException:
            traceback.print_exc()
            code = 1
        try:
            sys.stdout.flush()
        except Exception:
            pass
        try:
            sys.stderr.flush()
        except Exception:
            pass
    finally:
        os._exit(code)


def _exit_code(c):
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xFF
    try:
        sys.stderr.write("%s\n" % (c,))
    except Exception:
        pass
    return 1


# ---------------------------------------------------------------- caller

class ForkResult:
    """The clones of one ``Sandbox.fork(n)``: ``pids`` (index = clone id),
    ``wait()`` for their Results, ``kill()``, and a context manager whose
    exit (or ``close()``) ends every clone still running."""

    def __init__(self, n, kpid, cw, rr, sock):
        self.n = n
        self.pids: List[int] = []
        self._kpid, self._cw, self._rr, self._sock = kpid, cw, rr, sock
        self._fds: List[int] = []
        self._cap = 0
        self._recbuf = b""
        self._results: Optional[List] = None
        self._status = {}        # pid -> (wait status, how)
        self._tmpl = None        # (wait status, how) of the template
        self._ended = False      # the keeper's last record arrived
        self._lock = threading.Lock()      # wait / close
        self._cw_lock = threading.Lock()   # the control pipe: kill() vs close()

    def __repr__(self):
        return "ForkResult(n=%d, pids=%r)" % (self.n, self.pids[:8])

    def __len__(self):
        return self.n

    # -- receiving the clones (inside fork()) --

    def _receive(self):
        try:
            while len(self.pids) < self.n:
                msg, anc, flags, _ = self._sock.recvmsg(
                    65536, socket.CMSG_SPACE(_BATCH * 4), _CMSG_CLOEXEC)
                fds = array.array("i")
                for level, typ, data in anc:
                    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                        fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                self._fds.extend(fds)
                with _live_lock:
                    _live_fds.update(fds)
                if not msg:
                    self._template_failed()
                if msg[:1] == b"E":
                    self._template_error(msg)
                pids = array.array("i", msg[1:])
                if flags & socket.MSG_CTRUNC or len(pids) != len(fds):
                    raise ForkError("fork: the clones' pipes could not all be received "
                                    "(%d clones so far; RLIMIT_NOFILE too low?)"
                                    % len(self.pids))
                self.pids.extend(pids)
        except BaseException:
            self.close()
            raise
        self._close_sock()

    def _template_error(self, msg):
        kind, (num,), text = msg[1:2], struct.unpack("=i", msg[2:6]), msg[6:]
        text = text.decode(errors="replace")
        self.close()
        if kind == b"C":
            raise ConfinementError(num or 7, text)
        if kind == b"I":
            raise ForkError("fork: init_fn raised in the template:\n" + text)
        raise ForkError("fork: the template failed after %d of %d clones:\n%s"
                        % (len(self.pids), self.n, text))

    def _template_failed(self):
        self.close()
        st = self._tmpl
        if st is not None and st[1] == _HOW_TIMEOUT:
            raise TimeoutError("fork: the timeout expired before the clones were made")
        what = "ended" if st is None else _describe(st[0])
        raise ForkError("fork: the template %s before making %d clones" % (what, self.n))

    # -- the keeper's records --

    def _records(self, data):
        for pid, status, how in _REC.iter_unpack(data):
            if pid == _END_PID:
                self._ended = True
            elif pid == _TEMPLATE_PID:
                self._tmpl = (status, how)
            else:
                self._status[pid] = (status, how)

    def _feed(self, data):
        """Take bytes read from the keeper's pipe (b"": it hung up)."""
        if not data:
            self._ended = True
            return
        self._recbuf += data
        whole = len(self._recbuf) - len(self._recbuf) % _REC.size
        self._records(self._recbuf[:whole])
        self._recbuf = self._recbuf[whole:]

    def _read_all_records(self):
        while not self._ended:
            self._feed(os.read(self._rr, 65536))

    # -- waiting --

    def wait(self, timeout: Optional[float] = None) -> list:
        """Read every clone's stdout to its end and wait for all clones;
        return one Result per clone, in clone-id order (stderr is not
        captured: clones write to this process's stderr).  timeout
        (seconds, None: forever): TimeoutError if clones still run then
        (wait again to go on)."""
        with self._lock:
            if self._results is not None:
                return self._results
            if self._rr < 0:
                raise RuntimeError("the ForkResult was closed before it was waited for")
            self._collect(None if timeout is None else time.monotonic() + timeout)
            self._results = [self._result(i) for i in range(self.n)]
            self._release()
            return self._results

    def _collect(self, deadline):
        if not hasattr(self, "_outs"):
            self._outs = [bytearray() for _ in range(self.n)]
            self._dropped = [0] * self.n
            self._open = {fd: i for i, fd in enumerate(self._fds)}
        poller = select.poll()
        for fd in self._open:
            poller.register(fd, select.POLLIN)
        if not self._ended:
            poller.register(self._rr, select.POLLIN)
        while self._open or not self._ended:
            left = None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("fork: clones are still running")
            for fd, _ in poller.poll(None if left is None else int(left * 1000) + 1):
                data = os.read(fd, 65536)
                if fd == self._rr:
                    self._feed(data)
                    if self._ended:
                        poller.unregister(fd)
                    continue
                i = self._open[fd]
                if not data:
                    poller.unregister(fd)
                    del self._open[fd]
                    self._close_fd(fd)
                    self._fds[i] = -1
                    continue
                room = self._cap - len(self._outs[i]) if self._cap else len(data)
                self._outs[i] += data[:max(0, room)]
                self._dropped[i] += len(data) - max(0, min(room, len(data)))

    def _result(self, i):
        from . import ExitReason, Result

        status, how = self._status.get(self.pids[i], (None, _HOW_KILLED))
        out = bytes(self._outs[i])
        trunc = self._dropped[i]
        if how == _HOW_TIMEOUT and (status is None or os.WIFSIGNALED(status)):
            return Result(False, 124, ExitReason.TIMEOUT, signal.SIGKILL, out, b"",
                          stdout_truncated=trunc)
        if status is None or os.WIFSIGNALED(status):
            sig = signal.SIGKILL if status is None else os.WTERMSIG(status)
            reason = ExitReason.KILLED if sig == signal.SIGKILL else ExitReason.SIGNALED
            return Result(False, 128 + sig, reason, sig, out, b"", stdout_truncated=trunc)
        code = os.WEXITSTATUS(status)
        return Result(code == 0, code, ExitReason.EXITED, -1, out, b"",
                      stdout_truncated=trunc)

    # -- ending --

    def kill(self) -> None:
        """End every clone still running (their Results say KILLED).  May
        be called from another thread while wait() blocks."""
        with self._cw_lock:
            if self._cw >= 0:
                try:
                    os.write(self._cw, b"k")
                except OSError:   # the keeper is already gone
                    pass

    def close(self) -> None:
        """Kill what still runs, wait for the keeper, release every fd."""
        with self._lock:
            self._release()

    def _release(self):
        with self._cw_lock:
            if self._cw >= 0:
                self._close_fd(self._cw)   # hang-up: the keeper kills what is left
                self._cw = -1
        self._close_sock()
        for i, fd in enumerate(self._fds):
            if fd >= 0:
                self._close_fd(fd)     # a clone writing now gets EPIPE
                self._fds[i] = -1
        if self._rr >= 0:
            if self._results is None:
                try:
                    self._read_all_records()
                except OSError:
                    pass
            self._close_fd(self._rr)
            self._rr = -1
        if self._kpid:
            try:
                os.waitpid(self._kpid, 0)
            except ChildProcessError:
                pass
            self._kpid = 0

    def _close_sock(self):
        if self._sock is not None:
            with _live_lock:
                _live_fds.discard(self._sock.fileno())
            self._sock.close()
            self._sock = None

    @staticmethod
    def _close_fd(fd):
        with _live_lock:
            _live_fds.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _describe(status):
    if os.WIFSIGNALED(status):
        return "died of signal %d" % os.WTERMSIG(status)
    return "exited with status %d" % os.WEXITSTATUS(status)


def reduce(sb, cmd, clones, timeout=None):
    """Run cmd in sb with every clone's stdout, in clone-id order, on its
    stdin; its Result."""
    from . import StdioMode

    if not isinstance(clones, ForkResult):
        raise PolicyTypeError("reduce: clones must be the ForkResult of fork(), not %s"
                              % type(clones).__name__)
    data = b"".join(r.stdout for r in clones.wait())
    cap = StdioMode.CAPTURE
    with sb.popen(cmd, stdin=StdioMode.PIPE, stdout=cap, stderr=cap, timeout=timeout) as p:
        p.communicate(data)
        return p.wait()
