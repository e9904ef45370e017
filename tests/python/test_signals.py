"""Signals sent to `sandlock run` reach the sandboxed command (so its own
cleanup runs), `--kill-after` ends what ignores them, `--timeout` with
`--kill-after` is SIGTERM first, and `sandlock stop NAME` is TERM then KILL.
Each test checks what the guest saw: its handler writes a log line."""
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_cli import BUILD, PY, SYS_RO, default_signals  # noqa: E402

SANDLOCK = str(BUILD / "sandlock")

# The guest: logs each signal it gets; SIGTERM is its cue to clean up and
# exit 3.  "ready" once its handlers are in place.
GUEST = r"""
import os, signal, sys, time
log = sys.argv[1]
def on(sig, frame):
    with open(log, "a") as f:
        f.write("got %d\n" % sig)
    if sig == signal.SIGTERM:
        with open(log, "a") as f:
            f.write("cleaned up\n")
        sys.exit(3)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
    signal.signal(s, on)
open(log + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""

IGNORE_TERM = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""


def wait_for(path, proc, what="the guest to start"):
    for _ in range(3000):
        if path.exists():
            return
        if proc.poll() is not None:
            pytest.fail("sandlock ended before %s: %r" % (what, proc.communicate()))
        time.sleep(0.01)
    pytest.fail("timed out waiting for " + what)


def lines(path, n, proc):
    """The log once it has n lines (bounded wait)."""
    for _ in range(3000):
        got = path.read_text().splitlines() if path.exists() else []
        if len(got) >= n:
            return got
        time.sleep(0.01)
    pytest.fail("guest log has %r" % (path.read_text() if path.exists() else None))


def start(tmp, code, *flags):
    log = tmp / "log"
    src = tmp / "guest.py"
    src.write_text(code)
    p = subprocess.Popen([SANDLOCK, "run", *SYS_RO, "-w", str(tmp), *flags, "--", PY,
                          str(src), str(log)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    wait_for(Path(str(log) + ".ready"), p)
    return p, log


def test_signals_are_forwarded_and_the_command_cleans_up(tmp_path):
    p, log = start(tmp_path, GUEST)
    try:
        # Not terminating for sandlock: it stays, the guest gets each.
        sent = [signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH, signal.SIGHUP]
        for i, sig in enumerate(sent):
            p.send_signal(sig)
            lines(log, i + 1, p)
            assert p.poll() is None, "sandlock ended on %s" % sig.name
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 3  # the command's own exit status
        assert log.read_text().splitlines() == ["got %d" % s for s in sent] + [
            "got %d" % signal.SIGTERM, "cleaned up"]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_forwarded_signal_that_kills_the_command_kills_sandlock_the_same_way(tmp_path):
    p, log = start(tmp_path, "import sys,time\nopen(sys.argv[1]+'.ready','w').close()\n"
                             "time.sleep(600)\n")
    p.send_signal(signal.SIGQUIT)
    assert p.wait(timeout=60) == -signal.SIGQUIT


def test_kill_after_ends_a_command_that_ignores_sigterm(tmp_path):
    p, log = start(tmp_path, IGNORE_TERM, "--kill-after", "2")
    try:
        p.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert p.poll() is None  # the command ignores it; no kill before 2 s
        assert p.wait(timeout=60) == 128 + signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_without_kill_after_sigterm_is_only_forwarded(tmp_path):
    p, log = start(tmp_path, IGNORE_TERM)
    try:
        p.send_signal(signal.SIGTERM)
        time.sleep(1)
        assert p.poll() is None  # the command decides; it ignores TERM
    finally:
        p.kill()  # SIGKILL to sandlock still ends the sandbox
        p.wait()


@pytest.mark.parametrize("code,logged", [(GUEST, ["got 15", "cleaned up"]),
                                         (IGNORE_TERM, [])])
def test_timeout_with_kill_after_sends_sigterm_first(tmp_path, code, logged):
    log = tmp_path / "log"
    (tmp_path / "guest.py").write_text(code)
    r = subprocess.run([SANDLOCK, "run", *SYS_RO, "-w", str(tmp_path), "--timeout", "1",
                        "--kill-after", "1", "--", PY, str(tmp_path / "guest.py"), str(log)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 124, r.stderr
    got = log.read_text().splitlines() if log.exists() else []
    assert got == logged


def test_timeout_alone_still_kills_at_once(tmp_path):
    log = tmp_path / "log"
    (tmp_path / "guest.py").write_text(GUEST)
    r = subprocess.run([SANDLOCK, "run", *SYS_RO, "-w", str(tmp_path), "--timeout", "1",
                        "--", PY, str(tmp_path / "guest.py"), str(log)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 124
    assert not log.exists()  # SIGKILL: no handler ran


def test_stop_sends_term_then_kill(runtime, tmp_path):
    d, env = runtime
    for code, rc, logged in ((GUEST, 3, ["got 15", "cleaned up"]),
                             (IGNORE_TERM, 128 + signal.SIGKILL, [])):
        log = tmp_path / "log"
        for f in (log, Path(str(log) + ".ready")):
            if f.exists():
                f.unlink()
        (tmp_path / "guest.py").write_text(code)
        p = subprocess.Popen([SANDLOCK, "run", "--name", "stopme", *SYS_RO, "-w",
                              str(tmp_path), "--", PY, str(tmp_path / "guest.py"), str(log)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=default_signals)
        try:
            wait_for(Path(str(log) + ".ready"), p)
            s = subprocess.run([SANDLOCK, "stop", "-t", "1", "stopme"], env=env,
                               capture_output=True, text=True, timeout=60)
            assert s.returncode == 0, s.stderr
            assert p.wait(timeout=60) == rc
            assert (log.read_text().splitlines() if log.exists() else []) == logged
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    s = subprocess.run([SANDLOCK, "stop", "stopme"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert s.returncode == 1 and "no running sandbox named 'stopme'" in s.stderr


def test_stop_usage_errors(runtime):
    d, env = runtime
    for args in (["stop"], ["stop", "-t", "x", "n"], ["stop", "-t", "1"]):
        r = subprocess.run([SANDLOCK, *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 125, (args, r.stderr)


# Hostile: SANDLOCK_SIG_FORWARD's sender pid can be forged by sigqueue, so
# a guest that can signal init (signal scoping disabled) could ask init to
# pass any signal to the group.  First the probe works: a forwarded SIGUSR1
# reaches the guest's own handler through init.  Then SIGKILL is refused:
# passed on, it would kill init (which the guest cannot signal itself) and
# with it the sandbox's reaper.
HOSTILE = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
init = os.getppid()
def ask(sig):
    return libc.sigqueue(init, 40, ctypes.c_void_p(sig))
assert ask(signal.SIGUSR1) == 0, ctypes.get_errno()
for _ in range(200):
    if got: break
    time.sleep(0.01)
print("usr1-forwarded" if got else "usr1-lost", flush=True)
ask(signal.SIGKILL)
ask(signal.SIGSTOP)
time.sleep(0.5)
print("init-alive" if os.path.exists("/proc/%d" % init) else "init-dead", flush=True)
"""


def test_guest_cannot_make_init_pass_sigkill(tmp_path):
    src = tmp_path / "h.py"
    src.write_text(HOSTILE)
    r = subprocess.run([SANDLOCK, "run", *SYS_RO, "-r", str(tmp_path), "--disable",
                        "signal_scope", "-r", "/proc", "--", PY, str(src)],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.splitlines() == ["usr1-forwarded", "init-alive"], r.stderr
    assert r.returncode == 0
