"""`sandlock run` reference option names, refused unsupported options,
--json, --status-fd and TOML profiles, on real sandboxed processes."""
import json
import os
import subprocess
from pathlib import Path

import pytest

import sandlock as sandlock_py
from conftest import SYSTEM
from test_cli import PY, SANDLOCK, SYS_RO, run_in_sandbox, sandlock, tmpdir_path  # noqa: F401

SYS_DIRS = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]


# ---------------------------------------------------------------- option names

def test_reference_long_names_work(tmpdir_path):
    out = tmpdir_path / "out"
    out.mkdir()
    secret = tmpdir_path / "secret"
    secret.write_text("s3cret\n")
    args = []
    for d in SYS_DIRS:
        args += ["--fs-read", d]
    r = sandlock("run", *args, "--fs-write", str(out), "--fs-read", str(tmpdir_path),
                 "--fs-deny", str(secret), "--max-memory", "1G", "--max-processes", "16",
                 "--timeout", "30", "--cwd", str(out), "--clean-env", "--env", "A=b",
                 "--", "/bin/sh", "-c",
                 'echo hi > f; cat ../secret; echo "A=$A rc=$?"; pwd')
    assert (out / "f").read_text() == "hi\n"
    assert "s3cret" not in r.stdout
    assert f"A=b" in r.stdout and r.stdout.endswith(f"{out}\n")


def test_run_help_lists_every_table_option_once_per_line():
    r = sandlock("run", "--help")
    assert r.returncode == 0
    for opt in ("--fs-read", "--fs-write", "--fs-deny", "--max-memory", "--max-processes",
                "--timeout", "--net-allow", "--net-allow-bind", "--clean-env", "--env",
                "--cwd", "--profile", "--profile-file", "--json", "--status-fd"):
        lines = [l for l in r.stdout.splitlines() if f" {opt} " in l or l.endswith(f" {opt}")]
        assert len(lines) == 1, (opt, lines)
    assert "--user" in r.stdout  # listed as not supported yet


# The reference CLI's own names (its --user UID:GID, ...).
@pytest.mark.parametrize("opt", [["--user", "0:0"],
                                 ["--no-supervisor"], ["--exec-shell", "ls"]])
def test_unsupported_reference_options_are_refused(opt):
    r = run_in_sandbox(*opt, "--", "/bin/echo", "ran")
    assert r.returncode == 125
    assert f"option {opt[0]} is not supported yet" in r.stderr
    assert "ran" not in r.stdout


def test_net_allow_refuses_a_bad_rule_naming_the_flag():
    r = run_in_sandbox("--net-allow", "tcp://[::1", "--", "/bin/true")
    assert r.returncode == 125 and "--net-allow" in r.stderr and "tcp://[::1" in r.stderr


def test_version_matches_header():
    r = sandlock("--version")
    assert r.returncode == 0 and r.stdout.startswith("sandlock ")


# ---------------------------------------------------------------- --json

def test_json_reports_exit_status_after_the_output():
    # stdout stays the command's; the object is stderr's last line.
    r = run_in_sandbox("--json", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.returncode == 3
    assert r.stdout == "out\n"
    assert r.stderr.startswith("err\n")
    obj = json.loads(r.stderr.splitlines()[-1])
    assert obj["exit_code"] == 3 and obj["reason"] == "exited" and obj["signal"] == -1
    assert isinstance(obj["duration_ms"], int) and obj["duration_ms"] >= 0


def test_json_reports_signal_and_timeout():
    r = run_in_sandbox("--json", "--", "/bin/sh", "-c", "kill -TERM $$")
    obj = json.loads(r.stderr.splitlines()[-1])
    assert obj == {**obj, "exit_code": 143, "reason": "signaled", "signal": 15}
    r = run_in_sandbox("--json", "-t", "0.2", "--", "/bin/sleep", "30")
    obj = json.loads(r.stderr.splitlines()[-1])
    assert r.returncode == 124 and obj["reason"] == "timeout" and obj["exit_code"] == 124


def test_json_reports_configuration_errors():
    r = sandlock("run", "--json", "-r", "/nope-sandlock-json", "--", "/bin/true")
    assert r.returncode == 125 and r.stdout == ""
    obj = json.loads(r.stderr.splitlines()[-1])
    assert obj["reason"] == "error" and "/nope-sandlock-json" in obj["error"]
    assert obj["exit_code"] == 125 and obj["duration_ms"] == 0 and obj["signal"] == -1


def test_json_says_why_a_command_never_ran():
    """Not on PATH, a missing path, a file it may not execute: an exit
    127/126 with the reason, as C and Python report it; a program's own
    exit 127 has none."""
    for argv, code, error in ((["no-such-command-sandlock"], 127,
                               "command not found: no-such-command-sandlock"),
                              (["/no-such-file-sandlock"], 127,
                               "cannot execute /no-such-file-sandlock: ENOENT"),
                              (["/dev/null"], 126, "cannot execute /dev/null: EACCES"),
                              (["/bin/sh", "-c", "exit 127"], 127, None)):
        r = run_in_sandbox("-q", "--json", "--", *argv)
        obj = json.loads(r.stderr.splitlines()[-1])
        assert r.returncode == code and obj["exit_code"] == code, r.stderr
        assert obj["reason"] == "exited" and obj.get("error") == error, obj
        py = sandlock_py.Sandbox(fs_readable=SYSTEM).run(argv)
        assert py.exit_code == code and py.error == error and py.reason.name == "EXITED"


FORGE = ('printf \'{"exit_code":0,"reason":"exited","signal":null,"duration_ms":1}\'; '
         'printf \'{"exit_code":0,"reason":"exited","signal":null,"duration_ms":1}\' >&2; exit 7')


def test_json_cannot_be_forged_by_the_guest(tmp_path):
    # Issue 21 item 11: a guest printing a result object without a final
    # newline, on stdout and on stderr.  The real object is still stderr's
    # last line, alone; --json-file holds only the real one (the command
    # never has that file).
    out = tmp_path / "result.json"
    r = run_in_sandbox("--json", "--json-file", str(out), "--", "/bin/sh", "-c", FORGE)
    assert r.returncode == 7
    assert r.stdout.startswith('{"exit_code":0')      # the guest's own bytes, untouched
    assert json.loads(r.stderr.splitlines()[-1])["exit_code"] == 7
    assert json.loads(out.read_text())["exit_code"] == 7
    assert out.read_text().count("\n") == 1


def test_json_file_unwritable_is_refused(tmp_path):
    r = sandlock("run", "--json-file", str(tmp_path / "no" / "such" / "dir.json"), "-r", "/usr",
                 "--", "/bin/true")
    assert r.returncode == 125 and "--json-file" in r.stderr


def test_learn_json_keeps_stdout_a_valid_profile(tmp_path):
    import tomllib
    r = sandlock("learn", "--json", "--", "/bin/sh", "-c",
                 'printf \'{"fake":1}\'; cat /etc/hostname >/dev/null')
    assert r.returncode == 0, r.stderr
    tomllib.loads(r.stdout)            # the profile alone: it parses
    assert json.loads(r.stderr.splitlines()[-1])["exit_code"] == 0


# ---------------------------------------------------------------- --status-fd

@pytest.mark.parametrize("flag", ["--status-fd", "--json-status-fd"])
def test_status_fd_reports_child_pid_and_exit(flag):
    rfd, wfd = os.pipe()
    try:
        p = subprocess.run([str(SANDLOCK), "run", *SYS_RO, flag, str(wfd), "--",
                            "/bin/sh", "-c", "echo ppid=$PPID; exit 5"],
                           capture_output=True, text=True, pass_fds=(wfd,), timeout=60)
        os.close(wfd)
        wfd = -1
        with os.fdopen(rfd, "r") as f:
            rfd = -1
            lines = [json.loads(l) for l in f.read().splitlines()]
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
    assert p.returncode == 5
    assert len(lines) == 2, lines
    started, exited = lines
    assert started["event"] == "started"
    # the reported pid is the sandbox's init, the command's parent
    assert p.stdout == f"ppid={started['child_pid']}\n"
    assert exited["event"] == "exited" and exited["exit_code"] == 5
    assert exited["reason"] == "exited"


def test_status_fd_is_not_visible_to_the_command():
    rfd, wfd = os.pipe()
    try:
        p = subprocess.run([str(SANDLOCK), "run", *SYS_RO, "--status-fd", str(wfd), "--",
                            "/bin/sh", "-c", f"echo forged >&{wfd} && echo leaked"],
                           capture_output=True, text=True, pass_fds=(wfd,), timeout=60)
        os.close(wfd)
        wfd = -1
        with os.fdopen(rfd, "r") as f:
            rfd = -1
            data = f.read()
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
    assert "leaked" not in p.stdout
    assert "forged" not in data
    assert [json.loads(l)["event"] for l in data.splitlines()] == ["started", "exited"]


@pytest.mark.parametrize("fd,why", [("99", "not an open file descriptor"), ("abc", "whole number")])
def test_status_fd_must_be_an_open_writable_fd(fd, why):
    r = run_in_sandbox("--status-fd", fd, "--", "/bin/true")
    assert r.returncode == 125 and why in r.stderr


def test_status_fd_refuses_a_read_only_fd(tmpdir_path):
    f = tmpdir_path / "ro"
    f.write_text("")
    fd = os.open(f, os.O_RDONLY)
    try:
        p = subprocess.run([str(SANDLOCK), "run", *SYS_RO, "--status-fd", str(fd), "--",
                            "/bin/true"], capture_output=True, text=True, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert p.returncode == 125 and "not open for writing" in p.stderr


# ---------------------------------------------------------------- profiles

def write_profile(dirpath, name, text):
    d = dirpath / "sandlock" / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.toml").write_text(text)
    return d / f"{name}.toml"


def sys_read_toml():
    return "read = [" + ", ".join(f'"{d}"' for d in SYS_DIRS) + "]\n"


def profile_env(cfg_home):
    env = dict(os.environ)
    env["XDG_CONFIG_HOME"] = str(cfg_home)
    return env


def test_profile_by_name_applies_every_section(tmpdir_path):
    work = tmpdir_path / "work"
    work.mkdir()
    write_profile(tmpdir_path, "build", f"""
# a build profile
[program]
exec = "/bin/sh"
args = ["-c", "echo $CC $LANG > out; pwd; echo M=$SANDLOCK_TEST_MARKER"]
clean_env = true
env = {{ CC = "gcc", LANG = "C.UTF-8" }}
cwd = "{work}"

[filesystem]
{sys_read_toml()}write = ["{work}"]

[limits]
memory = "1G"
processes = 8

[syscalls]
extra_deny = []
""")
    env = profile_env(tmpdir_path)
    env["SANDLOCK_TEST_MARKER"] = "host"
    r = sandlock("run", "-p", "build", env=env)
    assert r.returncode == 0, r.stderr
    assert (work / "out").read_text() == "gcc C.UTF-8\n"
    assert r.stdout == f"{work}\nM=\n"  # cwd applied, the marker gone (clean_env)


def test_profile_limits_are_enforced(tmpdir_path):
    path = write_profile(tmpdir_path, "tiny", f"[filesystem]\n{sys_read_toml()}"
                                              "[limits]\nprocesses = 1\n")
    cmd = ["--", "/bin/sh", "-c", "/bin/true && echo forked"]
    limited = sandlock("run", "--profile-file", str(path), *cmd)
    assert "forked" not in limited.stdout
    # a flag overrides the profile's value
    roomy = sandlock("run", "--profile-file", str(path), "-P", "8", *cmd)
    assert roomy.stdout == "forked\n", roomy.stderr


def test_flags_add_to_profile_lists_and_command_replaces_exec(tmpdir_path):
    extra = tmpdir_path / "extra"
    extra.mkdir()
    (extra / "f").write_text("extra-data\n")
    path = write_profile(tmpdir_path, "p", f'[program]\nexec = "/bin/echo"\nargs = ["profile"]\n'
                                           f"[filesystem]\n{sys_read_toml()}")
    assert sandlock("run", "--profile-file", str(path)).stdout == "profile\n"
    denied = sandlock("run", "--profile-file", str(path), "--", "/bin/cat", str(extra / "f"))
    assert denied.returncode != 0 and denied.stdout == ""
    r = sandlock("run", "--profile-file", str(path), "-r", str(extra), "--",
                 "/bin/cat", str(extra / "f"))
    assert r.stdout == "extra-data\n", r.stderr


def test_profile_network_ports(tmpdir_path):
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1',{port}),timeout=5)\n"
            " print('connected')\nexcept OSError as e: print('denied', e.errno)")
    try:
        for allow, want in (([f'":{port}"'], "connected"), ([], "denied")):
            path = write_profile(tmpdir_path, "net", f"[filesystem]\n{sys_read_toml()}"
                                 f"[network]\nallow = [{', '.join(allow)}]\n")
            r = sandlock("run", "--profile-file", str(path), "--", PY, "-c", code)
            assert r.stdout.startswith(want), (allow, r.stdout, r.stderr)
    finally:
        srv.close()


def test_profile_determinism_section(tmpdir_path):
    code = "import os, time; print(time.gmtime().tm_year, os.getrandom(8).hex())"
    path = write_profile(tmpdir_path, "det", f"[filesystem]\n{sys_read_toml()}"
                         '[determinism]\nrandom_seed = 42\ntime_start = "2000-01-01T00:00:00Z"\n')
    a = sandlock("run", "--profile-file", str(path), "--", PY, "-c", code)
    b = sandlock("run", "--profile-file", str(path), "--", PY, "-c", code)
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout and a.stdout.startswith("2000 ")
    # the flag overrides the profile's seed
    c = sandlock("run", "--profile-file", str(path), "--random-seed", "7", "--", PY, "-c", code)
    assert c.stdout.startswith("2000 ") and c.stdout != a.stdout


def test_profile_knobs_reach_the_command(tmpdir_path):
    path = write_profile(tmpdir_path, "knobs", f"[filesystem]\n{sys_read_toml()}"
                         "[program]\nno_coredump = true\n[limits]\nopen_files = 64\n")
    cmd = ["--", "/bin/sh", "-c", "echo $(ulimit -n) $(ulimit -c)"]
    r = sandlock("run", "--profile-file", str(path), *cmd)
    assert r.returncode == 0 and r.stdout == "64 0\n", r.stderr
    # a flag's single value wins over the profile's
    r = sandlock("run", "--profile-file", str(path), "--max-open-files", "32", *cmd)
    assert r.stdout == "32 0\n", r.stderr
    r = sandlock("run", "--profile-file", str(path), "--max-cpu", "0", *cmd)
    assert r.returncode == 125 and "--max-cpu" in r.stderr


PROFILE_ERRORS = [
    ('fs_readable = ["/usr"]\n', "1:1: top-level key 'fs_readable'"),
    ("[filesytem]\nread = []\n", "1:1: unknown section [filesytem]"),
    ('[filesystem]\nreed = ["/usr"]\n', "2:1: unknown key 'reed' in [filesystem]"),
    ('[program]\nuid = 5\n', "2:7: [program] uid: not supported yet"),
    ('[network]\nallow = ["tcp://[::1"]\n', "2:10: [network] allow: 'tcp://[::1'"),
    ('[limits]\ngpu_devices = [300]\n', "2:16: [limits] gpu_devices: must be 0 to 255"),
    ('[limits]\nprocesses = "many"\n', "2:13: [limits] processes: expected an integer, got string"),
    ('[limits]\nmemory = "12X"\n', "'12X'"),
    ('[program]\nargs = ["x"]\n', "[program] args without exec"),
    ("[program]\nenv = { A = 1 }\n", "expected a string, got integer"),
    ("[limits]\nprocesses = 2026-01-01\n", "2:17: dates and times are not supported"),
    ("[limits]\n[limits]\n", "2:1: duplicate key 'limits'"),
    ("[limits]\ncpu = 101\n", "2:7: [limits] cpu: must be 1 to 100"),
    ("[program]\nno_coredump = 1\n", "expected a boolean, got integer"),
    ('[syscalls]\nextra_deny = ["a,b"]\n', "is not a syscall or group name"),
    ("[determinism]\nrandom_seed = -1\n", "2:15: [determinism] random_seed: must not be negative"),
    ('[determinism]\ntime_start = "yesterday"\n', "'yesterday': expected Unix seconds"),
]


@pytest.mark.parametrize("text,needle", PROFILE_ERRORS, ids=[n for _, n in PROFILE_ERRORS])
def test_profile_errors_name_file_line_and_column(tmpdir_path, text, needle):
    path = write_profile(tmpdir_path, "bad", text)
    r = sandlock("run", "--profile-file", str(path), "--", "/bin/echo", "ran")
    assert r.returncode == 125
    assert "ran" not in r.stdout
    assert r.stderr.startswith(f"sandlock: {path}:"), r.stderr
    assert needle in r.stderr, r.stderr


def test_unsupported_keys_asking_for_nothing_are_accepted(tmpdir_path):
    path = write_profile(tmpdir_path, "ok", f"[filesystem]\n{sys_read_toml()}"
                         "[program]\nno_supervisor = false\n[syscalls]\nextra_allow = []\n"
                         "[http]\nallow = []\n")
    r = sandlock("run", "--profile-file", str(path), "--", "/bin/echo", "ran")
    assert r.returncode == 0 and r.stdout == "ran\n", r.stderr


def test_profile_list_and_show(tmpdir_path):
    env = profile_env(tmpdir_path)
    assert sandlock("profile", "list", env=env).stdout == ""  # no directory yet
    text = "[limits]\nprocesses = 4\n"
    write_profile(tmpdir_path, "zeta", text)
    write_profile(tmpdir_path, "alpha", text)
    (tmpdir_path / "sandlock" / "profiles" / "notes.txt").write_text("x")
    r = sandlock("profile", "list", env=env)
    assert r.returncode == 0 and r.stdout == "alpha\nzeta\n"
    r = sandlock("profile", "show", "alpha", env=env)
    assert r.returncode == 0 and r.stdout == text
    r = sandlock("profile", "show", "missing", env=env)
    assert r.returncode == 125 and "missing.toml" in r.stderr
    r = sandlock("profile", "show", "../etc/passwd", env=env)
    assert r.returncode == 125 and "invalid profile name" in r.stderr


def test_profile_dir_falls_back_to_home(tmpdir_path):
    env = dict(os.environ)
    env.pop("XDG_CONFIG_HOME", None)
    env["HOME"] = str(tmpdir_path)
    write_profile(tmpdir_path / ".config", "home", "[limits]\nprocesses = 4\n")
    assert sandlock("profile", "list", env=env).stdout == "home\n"


def test_profile_without_exec_needs_a_command(tmpdir_path):
    path = write_profile(tmpdir_path, "noexec", "[limits]\nprocesses = 4\n")
    r = sandlock("run", "--profile-file", str(path))
    assert r.returncode == 125 and "no [program] exec" in r.stderr
    r = sandlock("run", "--profile", "a", "--profile-file", str(path), "--", "/bin/true")
    assert r.returncode == 125 and "only one of" in r.stderr


def test_a_profile_others_may_change_is_refused(tmpdir_path):
    """Like ssh's StrictModes: a profile decides what the sandbox may do,
    so one that another user wrote or may rewrite is not obeyed.  The
    control: the same profile, private, is obeyed (it grants the write)."""
    work = Path(tmpdir_path) / "work"
    work.mkdir()
    path = write_profile(tmpdir_path, "lax", f"[filesystem]\n{sys_read_toml()}"
                                             f'write = ["{work}"]\n')
    cmd = ["--", "/bin/sh", "-c", f"echo pwned > {work}/out"]
    os.chmod(path, 0o600)
    assert sandlock("run", "--profile-file", str(path), *cmd).returncode == 0
    assert (work / "out").read_text() == "pwned\n"
    (work / "out").unlink()
    for mode, needle in ((0o666, "writable by other users (mode 0666): chmod go-w"),
                         (0o620, "writable by other users (mode 0620)")):
        os.chmod(path, mode)
        r = sandlock("run", "--profile-file", str(path), *cmd)
        assert r.returncode == 125 and needle in r.stderr, r.stderr
        assert not (work / "out").exists()
    os.chmod(path, 0o644)
    os.chmod(os.path.dirname(path), 0o777)  # others may replace it
    try:
        r = sandlock("run", "--profile-file", str(path), *cmd)
        assert r.returncode == 125 and "directory others may write to" in r.stderr, r.stderr
    finally:
        os.chmod(os.path.dirname(path), 0o700)
    if os.getuid() == 0:
        os.chown(path, 65534, 65534)
        r = sandlock("run", "--profile-file", str(path), *cmd)
        assert r.returncode == 125 and "owned by uid 65534" in r.stderr, r.stderr
    assert not (work / "out").exists()


@pytest.mark.parametrize("spelled,full", [("--cpu-c", "--cpu-cores"), ("--time-s", "--time-start"),
                                          ("--fs-w", "--fs-write"), ("--net-allow-b", "--net-allow-bind")])
def test_abbreviated_long_options_are_refused(spelled, full):
    # getopt_long would take a unique prefix: a security tool must not guess
    r = run_in_sandbox(spelled, "0", "--", "/bin/echo", "ran")
    assert r.returncode == 125 and "ran" not in r.stdout
    assert f"option '{spelled}' is abbreviated: write it in full ({full})" in r.stderr
    r = run_in_sandbox(f"{spelled}=0", "--", "/bin/echo", "ran")
    assert r.returncode == 125 and "abbreviated" in r.stderr


CPU_LIST = "import os; print(sorted(os.sched_getaffinity(0)) == list(range(os.cpu_count())))"


@pytest.mark.parametrize("flag", ["-c", "--cpu"])
def test_cpu_is_the_references_cpu_percent(flag):
    # -c/--cpu N is max_cpu (percent of one core), not a core to pin to
    r = run_in_sandbox(flag, "1", "--", PY, "-c", CPU_LIST)
    assert r.returncode == 0 and r.stdout == "True\n", r.stderr
    r = run_in_sandbox(flag, "0", "--", "/bin/true")
    assert r.returncode == 125 and "--max-cpu" in r.stderr  # 1..100, as --max-cpu


def test_profile_delete(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path))
    d = tmp_path / "sandlock" / "profiles"
    d.mkdir(parents=True)
    (d / "gone.toml").write_text('[filesystem]\nread = ["/usr"]\n')
    run = lambda *a: subprocess.run([SANDLOCK, "profile", *a], capture_output=True, text=True,
                                    env=env, timeout=60)
    assert run("list").stdout == "gone\n"
    r = run("delete", "gone")
    assert r.returncode == 0 and "gone" in r.stdout and not (d / "gone.toml").exists()
    assert run("list").stdout == ""
    r = run("delete", "gone")
    assert r.returncode == 125 and "not found" in r.stderr
    r = run("delete", "../x")
    assert r.returncode == 125
