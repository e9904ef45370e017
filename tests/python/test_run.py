"""Plain runs (no user handlers): Result fields, output, timeout, config."""
import os
import signal

import pytest

import sandlock
from conftest import PY, SYSTEM


def test_result_fields_success(sb, host_hostname):
    r = sb.run(["/bin/cat", "/etc/hostname"])
    assert isinstance(r, sandlock.Result)
    assert r.success is True and r.exit_code == 0
    assert r.reason is sandlock.ExitReason.EXITED and r.reason == 0
    assert r.signal == -1 and r.killed_by_handler is False and r.error is None
    assert r.stdout == host_hostname and r.stderr == b""
    with pytest.raises(Exception):
        r.exit_code = 1  # frozen


def test_result_exit_code_and_stderr(sb):
    r = sb.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (r.success, r.exit_code, r.reason) == (False, 7, sandlock.ExitReason.EXITED)
    assert r.stdout == b"out\n" and r.stderr == b"err\n"


def test_signaled(sb):
    r = sb.run(["/bin/sh", "-c", "kill -SEGV $$"])
    assert r.reason is sandlock.ExitReason.SIGNALED and r.signal == signal.SIGSEGV
    assert r.exit_code == 128 + signal.SIGSEGV and not r.success


def test_large_output(tmpdir_path):
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = os.path.join(tmpdir_path, "big.bin")
    with open(path, "wb") as f:
        f.write(data)
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [tmpdir_path], timeout=60)
    r = sb.run(["/bin/sh", "-c", 'cat "$1"; cat "$1" >&2', "sh", path])
    assert r.success
    assert r.stdout == data and r.stderr == data


def test_timeout_reason(sb):
    r = sb.run(["/bin/sleep", "30"], timeout=0.5)
    assert r.reason is sandlock.ExitReason.TIMEOUT and r.exit_code == 124 and not r.success


def test_sandbox_timeout_setting():
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=0.3).run(["/bin/sleep", "30"])
    assert r.reason is sandlock.ExitReason.TIMEOUT


def test_landlock_denies_unlisted_path(tmpdir_path):
    secret = os.path.join(tmpdir_path, "secret")
    with open(secret, "w") as f:
        f.write("TOPSECRET")
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run(["/bin/cat", secret])
    assert not r.success and b"TOPSECRET" not in r.stdout
    assert b"Permission denied" in r.stderr


def test_env_cwd_clean_env(tmpdir_path):
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [tmpdir_path], cwd=tmpdir_path,
                          env={"SANDLOCK_T": "v1"}, timeout=60)
    r = sb.run(["/bin/sh", "-c", 'echo "$SANDLOCK_T"; pwd'])
    assert r.stdout.decode().split() == ["v1", os.path.realpath(tmpdir_path)]


def _env_of(sb):
    r = sb.run(["/usr/bin/env"])
    assert r.success, r.stderr
    return r.stdout.decode().splitlines()


def test_clean_env_is_the_minimal_set(monkeypatch):
    """clean_env=True: PATH, HOME, USER, TERM, LANG with the caller's values
    (read at run time), then env overrides; nothing else leaks."""
    for k, v in (("SANDLOCK_LEAK", "leaked"), ("PATH", "/usr/bin:/bin"), ("HOME", "/h"),
                 ("USER", "u"), ("TERM", "dumb"), ("LANG", "C.UTF-8"), ("LC_ALL", "C")):
        monkeypatch.setenv(k, v)
    sb = sandlock.Sandbox(fs_readable=SYSTEM, clean_env=True, env={"A": "b", "TERM": "vt100"},
                          timeout=60)
    assert _env_of(sb) == ["PATH=/usr/bin:/bin", "HOME=/h", "USER=u", "TERM=vt100",
                           "LANG=C.UTF-8", "A=b"]
    for k in ("PATH", "HOME", "LANG"):
        monkeypatch.delenv(k)
    # PATH falls back to a default; the others are simply absent
    assert _env_of(sb) == ["PATH=/usr/local/bin:/usr/bin:/bin", "USER=u", "TERM=vt100", "A=b"]
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    inherited = _env_of(sandlock.Sandbox(fs_readable=SYSTEM, timeout=60))
    assert "SANDLOCK_LEAK=leaked" in inherited and "LC_ALL=C" in inherited


def test_clean_env_documented():
    doc = sandlock.Sandbox.__doc__
    assert all(k in doc for k in ("PATH", "HOME", "USER", "TERM", "LANG"))


def test_command_not_found_is_a_failed_result(sb):
    # an explicit path is exec'd as is: the exec fails in the child (127)
    r = sb.run(["/nonexistent/binary"])
    assert r.reason is sandlock.ExitReason.EXITED and r.exit_code == 127
    assert b"/nonexistent/binary" in r.stderr and not r.success
    # a bare name not on PATH: the same kind of Result, not an exception
    r = sb.run(["no-such-command-sandlock-xyz", "arg"])
    assert (r.success, r.exit_code, r.reason, r.signal) == (
        False, 127, sandlock.ExitReason.EXITED, -1)
    assert b"no-such-command-sandlock-xyz" in r.stderr and b"not found" in r.stderr
    assert r.stdout == b"" and "no-such-command-sandlock-xyz" in r.error
    # a bare name that is on PATH still runs
    assert sb.run(["true"]).success


def test_sandbox_reusable_and_thread_safe(sb, host_hostname):
    import threading
    results = []
    ts = [threading.Thread(target=lambda: results.append(sb.run(["/bin/cat", "/etc/hostname"])))
          for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 4 and all(r.stdout == host_hostname for r in results)
