"""Tests for the `sandlock` command (build/sandlock), run as a subprocess.

Every test runs a real sandboxed process and checks what it saw / did.
The binary is found via $SANDLOCK_BUILD (set by the Makefile) or <repo>/build.
"""
import os
import pty
import re
import select
import shlex
import signal
import shutil
import socket
import subprocess
import tempfile
import termios
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = BUILD / "sandlock"

# Read-only system trees a dynamically linked program needs.
SYS_RO = [a for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)
          for a in ("-r", d)]
BASH = shutil.which("bash", path="/usr/bin:/bin") or "/bin/bash"
PY = "/usr/bin/python3"


def sandlock(*args, input=None, env=None, timeout=60):
    """Run build/sandlock with args; returns the CompletedProcess (text)."""
    if not SANDLOCK.exists():
        pytest.fail(f"{SANDLOCK} not built (run `make all`)")
    return subprocess.run([str(SANDLOCK), *args], input=input, env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_in_sandbox(*opts_and_cmd, **kw):
    """`sandlock run <system read-only trees> <opts> -- <cmd>`; pass '--' in args."""
    return sandlock("run", *SYS_RO, *opts_and_cmd, **kw)


@pytest.fixture
def tmpdir_path():
    d = tempfile.mkdtemp(prefix="sandlock-cli-")
    try:
        yield Path(os.path.realpath(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- help/version

def test_help_lists_run_command():
    r = sandlock("--help")
    assert r.returncode == 0
    assert "Usage: sandlock run" in r.stdout
    assert "--version" in r.stdout


def subcommands():
    """The commands `sandlock --help` lists under "Commands:"."""
    text = sandlock("--help").stdout.split("Commands:\n")[1].split("\n\n")[0]
    return re.findall(r"^  ([a-z]+) ", text, re.M)


def test_every_subcommand_answers_help():
    """`sandlock CMD --help` and `-h` print CMD's usage on stdout and exit 0
    for every command the main help lists (inspect used to refuse --help
    as an unexpected argument, exit 125)."""
    cmds = subcommands()
    assert {"run", "learn", "profile", "check", "ps", "inspect", "kill", "stop"} <= set(cmds)
    for cmd in cmds:
        for flag in ("--help", "-h"):
            r = sandlock(cmd, flag)
            assert r.returncode == 0, (cmd, flag, r.stderr)
            assert r.stdout.startswith(f"Usage: sandlock {cmd}"), (cmd, flag, r.stdout)
            assert r.stderr == "", (cmd, flag, r.stderr)


@pytest.mark.parametrize("args", [("inspect", "some-run", "--help"),
                                  ("stop", "-t", "3", "some-run", "-h"),
                                  ("kill", "some-run", "--help")])
def test_help_after_other_arguments_still_helps(args):
    """--help wins wherever it stands among a control command's arguments,
    and asks nothing of a run of that name."""
    r = sandlock(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"Usage: sandlock {args[0]}")


def test_run_help_lists_every_option():
    r = sandlock("run", "--help")
    assert r.returncode == 0
    for opt in ("--read", "--write", "--deny", "--max-memory", "--max-processes",
                "--timeout", "--net-allow", "--net-allow-bind", "--clean-env",
                "--env", "--cwd"):
        assert opt in r.stdout, opt


def test_version_matches_header():
    header = (REPO / "include" / "sandlock.h").read_text()
    version = re.search(r'#define SANDLOCK_VERSION "([^"]+)"', header).group(1)
    r = sandlock("--version")
    assert r.returncode == 0
    assert r.stdout == f"sandlock {version}\n"


# ---------------------------------------------------------------- running

def test_cat_hostname_prints_host_file():
    expected = Path("/etc/hostname").read_text()
    r = run_in_sandbox("--", "/bin/cat", "/etc/hostname")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected


def test_stdio_is_inherited_and_separate():
    r = run_in_sandbox("--", "/bin/sh", "-c", "cat; echo out; echo err >&2",
                       input="from-stdin\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "from-stdin\nout\n"
    assert r.stderr == "err\n"


def test_command_flags_are_not_parsed_by_sandlock():
    # "-r" and "--help" after "--" belong to the command.
    r = run_in_sandbox("--", "/bin/echo", "-r", "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "-r --help\n"


def test_write_allowed_under_w_and_denied_elsewhere(tmpdir_path):
    rw = tmpdir_path / "rw"
    ro = tmpdir_path / "ro"
    rw.mkdir()
    ro.mkdir()
    ok = run_in_sandbox("-w", str(rw), "-r", str(ro), "--",
                        "/bin/sh", "-c", f"echo hello > {rw}/f")
    assert ok.returncode == 0, ok.stderr
    assert (rw / "f").read_text() == "hello\n"

    denied = run_in_sandbox("-w", str(rw), "-r", str(ro), "--",
                            "/bin/sh", "-c", f"echo hello > {ro}/f")
    assert denied.returncode != 0
    assert not (ro / "f").exists()

    # A tree not mentioned at all is not even readable.
    (ro / "secret").write_text("s3cret\n")
    hidden = sandlock("run", *SYS_RO, "--", "/bin/cat", str(ro / "secret"))
    assert hidden.returncode != 0
    assert "s3cret" not in hidden.stdout


def test_deny_carves_out_of_allowed_tree(tmpdir_path):
    (tmpdir_path / "ok").write_text("fine\n")
    (tmpdir_path / "secret").write_text("s3cret\n")
    r = run_in_sandbox("-r", str(tmpdir_path), "-d", str(tmpdir_path / "secret"), "--",
                       "/bin/sh", "-c",
                       f"cat {tmpdir_path}/ok; cat {tmpdir_path}/secret; echo rc=$?")
    assert "fine\n" in r.stdout
    assert "s3cret" not in r.stdout
    assert re.search(r"rc=[1-9]", r.stdout), r.stdout


def test_cwd_option(tmpdir_path):
    r = run_in_sandbox("-r", str(tmpdir_path), "-C", str(tmpdir_path), "--", "/bin/pwd")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{tmpdir_path}\n"


# ---------------------------------------------------------------- exit status

def test_exit_status_propagates():
    assert run_in_sandbox("--", "/bin/sh", "-c", "exit 7").returncode == 7
    assert run_in_sandbox("--", "/bin/true").returncode == 0
    assert run_in_sandbox("--", "/bin/false").returncode == 1


def test_signal_death_is_128_plus_signal():
    r = run_in_sandbox("--", "/bin/sh", "-c", "kill -KILL $$")
    assert r.returncode == 128 + 9


def test_timeout_exits_124():
    r = run_in_sandbox("-t", "0.5", "--", "/bin/sleep", "30")
    assert r.returncode == 124


def test_timeout_not_hit_keeps_status():
    r = run_in_sandbox("-t", "30", "--", "/bin/sh", "-c", "exit 3")
    assert r.returncode == 3


def test_command_not_found_is_127():
    r = run_in_sandbox("--", "/nonexistent/command")
    assert r.returncode == 127
    assert r.stderr == "sandlock: cannot execute /nonexistent/command: ENOENT\n"
    r = run_in_sandbox("--", "no-such-command-sandlock-test")
    assert r.returncode == 127


def test_command_not_executable_is_126(tmpdir_path):
    f = tmpdir_path / "not-exec"
    f.write_text("#!/bin/sh\necho ran\n")
    f.chmod(0o644)
    r = run_in_sandbox("-r", str(tmpdir_path), "--", str(f))
    assert r.returncode == 126
    assert "ran" not in r.stdout
    assert r.stderr == f"sandlock: cannot execute {f}: EACCES\n"


def test_command_outside_read_paths_is_126_with_message(tmpdir_path):
    f = tmpdir_path / "script"
    f.write_text("#!/bin/sh\necho ran\n")
    f.chmod(0o755)
    granted = run_in_sandbox("-r", str(tmpdir_path), "--", str(f))
    assert granted.returncode == 0 and granted.stdout == "ran\n"  # control
    r = run_in_sandbox("--", str(f))  # Landlock denies the exec
    assert r.returncode == 126
    assert r.stdout == ""
    assert r.stderr == (f"sandlock: cannot execute {f}: EACCES\n"
                        f"sandlock: cannot execute {f}: not under any -r/-w; allow with -r "
                        f"{tmpdir_path}\n")


# ---------------------------------------------------------------- usage errors

ERROR_CASES = [
    # (args, substring expected in stderr)
    (["run", "-r", "/nope-sandlock-test", "--", "/bin/true"], "/nope-sandlock-test"),
    (["run", "-w", "/nope-sandlock-test", "--", "/bin/true"], "/nope-sandlock-test"),
    (["run", "-d", "/nope-sandlock-test", "--", "/bin/true"], "/nope-sandlock-test"),
    (["run", "-C", "/nope-sandlock-test", "--", "/bin/true"], "/nope-sandlock-test"),
    (["run", "--bogus", "--", "/bin/true"], "unknown option '--bogus'"),
    (["run", "-x", "--", "/bin/true"], "unknown option '-x'"),
    (["run", "--net", "80", "--", "/bin/true"], "ambiguous option '--net'"),
    (["run", "-r"], "requires an argument"),
    (["run", "--timeout"], "requires an argument"),
    (["run", "-r", "/usr", "/bin/true"], "expected '--'"),
    (["run", "-r", "/usr"], "missing '--'"),
    (["run", "-r", "/usr", "--"], "missing command"),
    (["run"], "missing '--'"),
    (["run", "-m", "-1", "--", "/bin/true"], "-m"),
    (["run", "-m", "12X", "--", "/bin/true"], "'12X'"),
    (["run", "-m", "1.5.5G", "--", "/bin/true"], "'1.5.5G'"),
    (["run", "-m", "0", "--", "/bin/true"], "greater than zero"),
    (["run", "-m", "99999999999999999999999", "--", "/bin/true"], "too large"),
    (["run", "-m", "17179869184G", "--", "/bin/true"], "too large"),
    (["run", "-P", "-1", "--", "/bin/true"], "-P"),
    (["run", "-P", "abc", "--", "/bin/true"], "'abc'"),
    (["run", "-P", "4294967296", "--", "/bin/true"], "out of range"),
    (["run", "-P", " 5", "--", "/bin/true"], "-P"),
    (["run", "-t", "-1", "--", "/bin/true"], "-t"),
    (["run", "-t", "abc", "--", "/bin/true"], "'abc'"),
    (["run", "-t", "1e3", "--", "/bin/true"], "'1e3'"),
    (["run", "-t", "0", "--", "/bin/true"], "greater than zero"),
    (["run", "-t", "1.", "--", "/bin/true"], "'1.'"),
    (["run", "-t", "99999999999999999999", "--", "/bin/true"], "too large"),
    (["run", "--net-allow", "0", "--", "/bin/true"], "--net-allow"),
    (["run", "--net-allow", "65536", "--", "/bin/true"], "--net-allow '65536': port out of range"),
    (["run", "--net-allow", "x:99999", "--", "/bin/true"], "--net-allow 'x:99999': port out of range"),
    (["run", "--net-allow", "ftp://h:1", "--", "/bin/true"], "--net-allow 'ftp://h:1': unknown scheme"),
    (["run", "--net-deny", "example.com", "--", "/bin/true"], "--net-deny 'example.com'"),
    (["run", "--net-allow", "no-such-host.invalid", "--", "/bin/true"], "cannot resolve host"),
    (["run", "--net-allow-bind", "-80", "--", "/bin/true"], "--net-allow-bind '-80'"),
    (["run", "--net-allow-bind", "90-80", "--", "/bin/true"], "--net-allow-bind '90-80'"),
    (["run", "--env", "NOEQUALS", "--", "/bin/true"], "K=V"),
    (["run", "--env", "=value", "--", "/bin/true"], "K=V"),
    (["frobnicate"], "unknown command 'frobnicate'"),
    ([], "Usage"),
]


@pytest.mark.parametrize("args,needle", ERROR_CASES,
                         ids=[" ".join(a) or "<none>" for a, _ in ERROR_CASES])
def test_usage_and_config_errors_exit_125(args, needle):
    r = sandlock(*args)
    assert r.returncode == 125, (r.returncode, r.stderr)
    assert needle in r.stderr
    if args:
        assert r.stderr.startswith("sandlock: ")
    assert r.stdout == ""


def test_conflicting_allow_and_deny_is_125(tmpdir_path):
    r = sandlock("run", "-r", str(tmpdir_path), "-d", str(tmpdir_path), "--", "/bin/true")
    assert r.returncode == 125
    assert r.stderr.startswith("sandlock: ")
    assert str(tmpdir_path) in r.stderr


def test_writable_proc_is_refused():
    r = sandlock("run", "-w", "/proc", "--", "/bin/true")
    assert r.returncode == 125
    assert "/proc" in r.stderr


def test_error_does_not_run_the_command(tmpdir_path):
    marker = tmpdir_path / "ran"
    r = sandlock("run", *SYS_RO, "-w", str(tmpdir_path), "-P", "junk", "--",
                 "/bin/sh", "-c", f"touch {marker}")
    assert r.returncode == 125
    assert not marker.exists()


# ---------------------------------------------------------------- limits

def test_max_processes_limits_forks():
    script = "/bin/true && /bin/true && echo forked"
    limited = run_in_sandbox("-P", "1", "--", "/bin/sh", "-c", script)
    assert "forked" not in limited.stdout
    assert limited.returncode != 0
    roomy = run_in_sandbox("-P", "8", "--", "/bin/sh", "-c", script)
    assert roomy.returncode == 0, roomy.stderr
    assert roomy.stdout == "forked\n"


def test_max_memory_limits_allocation():
    code = "b = bytearray(512 * 1024 * 1024); print('allocated')"
    limited = run_in_sandbox("-m", "256M", "--", PY, "-c", code)
    assert "allocated" not in limited.stdout
    # memory cgroup: the kernel's OOM killer; RLIMIT_AS fallback: MemoryError
    assert limited.returncode == 128 + 9 or "MemoryError" in limited.stderr, limited
    roomy = run_in_sandbox("--", PY, "-c", code)
    assert roomy.returncode == 0, roomy.stderr
    assert roomy.stdout == "allocated\n"


# ---------------------------------------------------------------- environment

def test_env_sets_variable_and_keeps_host_env():
    env = dict(os.environ, SANDLOCK_TEST_MARKER="host")
    r = run_in_sandbox("--env", "FOO=bar=baz", "--env", "EMPTY=", "--", "/usr/bin/env",
                       env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "FOO=bar=baz" in lines
    assert "EMPTY=" in lines
    assert "SANDLOCK_TEST_MARKER=host" in lines


def test_env_overrides_host_value():
    env = dict(os.environ, SANDLOCK_TEST_MARKER="host")
    r = run_in_sandbox("--env", "SANDLOCK_TEST_MARKER=sandbox", "--", "/usr/bin/env", env=env)
    lines = r.stdout.splitlines()
    assert "SANDLOCK_TEST_MARKER=sandbox" in lines
    assert "SANDLOCK_TEST_MARKER=host" not in lines


def test_clean_env_keeps_only_the_minimal_set():
    env = dict(os.environ, SANDLOCK_TEST_MARKER="host", PATH="/usr/bin:/bin", HOME="/h",
               USER="u", TERM="dumb", LANG="C.UTF-8", LC_ALL="C")
    r = run_in_sandbox("--clean-env", "--env", "FOO=bar", "--", "/usr/bin/env", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "PATH=/usr/bin:/bin", "HOME=/h", "USER=u", "TERM=dumb", "LANG=C.UTF-8", "FOO=bar"]
    # unset in the caller: left out, except PATH, which gets a default
    env = {"SANDLOCK_TEST_MARKER": "host", "USER": "u"}
    r = run_in_sandbox("--clean-env", "--", "/usr/bin/env", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["PATH=/usr/local/bin:/usr/bin:/bin", "USER=u"]


def test_help_documents_clean_env_set():
    out = sandlock("run", "--help").stdout
    assert "--clean-env" in out and all(k in out for k in ("PATH", "HOME", "USER", "TERM", "LANG"))


# ---------------------------------------------------------------- network

@pytest.fixture
def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    try:
        yield s
    finally:
        s.close()


def connect_cmd(port):
    return ["--", BASH, "-c", f"echo hello > /dev/tcp/127.0.0.1/{port}"]


def pending_connection(sock, wait):
    ready, _, _ = select.select([sock], [], [], wait)
    return bool(ready)


def test_net_allow_permits_connect(listener):
    port = listener.getsockname()[1]
    r = run_in_sandbox("--net-allow", str(port), *connect_cmd(port))
    assert r.returncode == 0, r.stderr
    assert pending_connection(listener, 5)
    conn, _ = listener.accept()
    with conn:
        conn.settimeout(5)
        assert conn.recv(100) == b"hello\n"


def test_connect_denied_without_net_allow(listener):
    port = listener.getsockname()[1]
    r = run_in_sandbox(*connect_cmd(port))
    assert r.returncode != 0
    # The child has exited; a connection would already be in the backlog.
    assert not pending_connection(listener, 0.2)


def test_net_allow_is_port_specific(listener):
    port = listener.getsockname()[1]
    other = port + 1 if port < 65535 else port - 1
    r = run_in_sandbox("--net-allow", str(other), *connect_cmd(port))
    assert r.returncode != 0
    assert not pending_connection(listener, 0.2)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BIND_CODE = """
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except PermissionError:
    print("denied"); sys.exit(3)
print("bound")
"""


def test_net_allow_bind():
    port = free_port()
    ok = run_in_sandbox("--net-allow-bind", str(port), "--", PY, "-c", BIND_CODE, str(port))
    assert ok.stdout == "bound\n", ok.stderr
    denied = run_in_sandbox("--", PY, "-c", BIND_CODE, str(port))
    assert denied.returncode == 3
    assert denied.stdout == "denied\n"


# ---------------------------------------------------------------- signals


def default_signals():
    """Default dispositions for the signals sandlock forwards: it keeps a
    signal its parent ignores ignored (nohup; `cmd &` in a script ignores
    SIGINT), so a harness started that way must not decide these tests."""
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(s, signal.SIG_DFL)

from conftest import alive as _alive  # noqa: E402


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("starter", ["", "setsid "])
def test_signal_to_cli_kills_whole_sandbox(tmpdir_path, sig, starter):
    # A grandchild in the sandbox's process group: PDEATHSIG alone would
    # only kill the direct child and leave this one running.  With setsid
    # it also leaves the process group, so a killpg would miss it too.
    pidfile = tmpdir_path / "pid"
    script = (f"{starter}sleep 300 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; "
              "wait")
    proc = subprocess.Popen([str(SANDLOCK), "run", *SYS_RO, "-r", "/dev/null",
                             "-w", str(tmpdir_path), "--", "/bin/sh", "-c", script],
                            preexec_fn=default_signals)
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pidfile.exists(), "sandboxed script did not start"
        grandchild = int(pidfile.read_text())
        assert _alive(grandchild)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == -sig  # sandlock dies of the same signal
        deadline = time.monotonic() + 10
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(grandchild)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- terminal

class PtyProcess:
    """argv run as the session leader of a new pseudo-terminal (which is its
    controlling terminal), like a program started from a terminal window.
    Every read has a deadline, so a stopped program fails the test instead
    of hanging it."""

    READY = b"<pty-ready>"

    def __init__(self, argv, echo=False, env=None):
        pid, fd = pty.fork()
        if pid == 0:  # child: only exec (or report failure through the status)
            try:
                default_signals()  # as from a terminal, whatever the harness ignores
                if not echo:  # what comes back was then written by a program
                    attrs = termios.tcgetattr(0)
                    attrs[3] &= ~termios.ECHO
                    termios.tcsetattr(0, termios.TCSANOW, attrs)
                os.write(1, self.READY + b"\n")
                os.execve(str(argv[0]), [str(a) for a in argv],
                          env if env is not None else os.environ)
            finally:
                os._exit(127)
        self.pid, self.fd, self.buf, self.status = pid, fd, b"", None
        # Nothing may be typed before echo is off and the program is about
        # to start: a tty echo would look like the program's output.
        try:
            self.expect(self.READY + b"\r\n")
        except BaseException:
            self.__exit__()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.status is None:
            os.killpg(self.pid, signal.SIGKILL)  # its session's leader group
            os.waitpid(self.pid, 0)
        os.close(self.fd)

    def send(self, data):
        os.write(self.fd, data)

    def expect(self, needle, timeout=10):
        """Read until needle appears; returns what came before it."""
        deadline = time.monotonic() + timeout
        while needle not in self.buf:
            ready, _, _ = select.select([self.fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                pytest.fail(f"timed out waiting for {needle!r}; terminal showed {self.buf!r}")
            try:
                data = os.read(self.fd, 4096)
            except OSError:  # EIO: every slave fd is closed
                data = b""
            if not data:
                pytest.fail(f"terminal closed before {needle!r}; it showed {self.buf!r}")
            self.buf += data
        before, _, self.buf = self.buf.partition(needle)
        return before

    def wait(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            time.sleep(0.02)
        pytest.fail(f"{self.pid} did not exit; terminal showed {self.buf!r}")


def test_interactive_program_reads_the_terminal():
    # The sandbox has its own process group: without being made the
    # terminal's foreground group, cat is stopped by SIGTTIN and the line
    # never comes back.
    with PtyProcess([SANDLOCK, "run", *SYS_RO, "--", "/bin/cat"]) as p:
        p.send(b"typed-into-the-sandbox\n")
        p.expect(b"typed-into-the-sandbox\r\n")
        p.send(b"second line\n")
        p.expect(b"second line\r\n")
        p.send(b"\x04")  # ^D: end of input for cat
        assert p.wait() == 0


GIVE_BACK_CASES = [
    (["--", "/bin/true"], 0),
    (["--", "/bin/sh", "-c", "kill -KILL $$"], 128 + 9),
    (["-t", "0.3", "--", "/bin/sleep", "30"], 124),
    (["--", "/nonexistent/command"], 127),
]


@pytest.mark.parametrize("args,rc", GIVE_BACK_CASES,
                         ids=["exit", "signal", "timeout", "exec-failure"])
def test_terminal_is_given_back_after_the_run(args, rc):
    # A non-interactive sh runs sandlock in its own process group; after the
    # run, a cat of that group must be able to read the terminal again (else
    # it gets EIO/SIGTTIN as a background process).
    cmd = shlex.join([str(SANDLOCK), "run", *SYS_RO, *args])
    with PtyProcess(["/bin/sh", "-c", f"{cmd}; echo rc=$?; exec /bin/cat"]) as p:
        p.expect(f"rc={rc}\r\n".encode())
        p.send(b"read-after-the-run\n")
        p.expect(b"read-after-the-run\r\n")
        p.send(b"\x04")
        assert p.wait() == 0


def interactive_bash():
    if not os.path.exists(BASH):
        pytest.skip("needs bash for job control")
    env = {"PATH": "/usr/bin:/bin", "PS1": "PROMPT> ", "TERM": "dumb"}
    p = PtyProcess([BASH, "--norc", "--noprofile", "--noediting", "-i"], echo=True, env=env)
    p.expect(b"PROMPT> ")
    p.send(b"stty -echo\n")  # from now on only program output comes back
    p.expect(b"PROMPT> ")
    return p


def test_ctrl_z_stops_the_job_and_fg_resumes_it():
    # ^Z stops the sandbox's group (the terminal's foreground); sandlock must
    # stop too so the shell gets its prompt back, and resume it on `fg`.
    with interactive_bash() as p:
        p.send(" ".join([str(SANDLOCK), "run", *SYS_RO, "--", "/bin/cat\n"]).encode())
        p.send(b"before-stop\n")
        p.expect(b"before-stop\r\n")
        p.send(b"\x1a")  # ^Z
        assert b"Stopped" in p.expect(b"PROMPT> ")
        p.send(b"fg\n")
        p.send(b"after-fg\n")
        p.expect(b"after-fg\r\n")
        p.send(b"\x04")
        p.expect(b"PROMPT> ")
        p.send(b"echo rc=$?\n")
        p.expect(b"rc=0\r\n")
        p.send(b"exit\n")
        assert p.wait() == 0


def test_background_job_reading_terminal_stops_until_fg():
    with interactive_bash() as p:
        p.send(" ".join([str(SANDLOCK), "run", *SYS_RO, "--", "/bin/cat &\n"]).encode())
        p.expect(b"PROMPT> ")
        # cat reads the terminal from the background: the job (sandlock, not
        # only its sandbox) must show as stopped for tty input, as cat would.
        deadline = time.monotonic() + 10
        while True:
            p.send(b"jobs -l\n")
            if b"Stopped (tty input)" in p.expect(b"PROMPT> "):
                break
            assert time.monotonic() < deadline, "job never showed as stopped"
            time.sleep(0.1)
        p.send(b"fg\n")
        p.send(b"now-in-front\n")
        p.expect(b"now-in-front\r\n")
        p.send(b"\x04")
        p.expect(b"PROMPT> ")
        p.send(b"echo rc=$?\n")
        p.expect(b"rc=0\r\n")
        p.send(b"exit\n")
        assert p.wait() == 0


def test_ctrl_c_interrupts_the_sandbox_and_sandlock_dies_of_sigint():
    # ^C goes to the terminal's foreground group, the sandbox; sandlock then
    # dies of SIGINT like the command, so a calling shell sees an interrupt.
    with PtyProcess([SANDLOCK, "run", *SYS_RO, "--", "/bin/cat"]) as p:
        p.send(b"running\n")
        p.expect(b"running\r\n")
        p.send(b"\x03")  # ^C
        assert p.wait() == -signal.SIGINT
