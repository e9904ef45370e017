"""Python profiles (sandlock.profile): the CLI's files and schema, applied
to a Sandbox that runs real commands."""
import os
import socket

import pytest

import sandlock
from sandlock.profile import ProfileError, read_profile

SYS_DIRS = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
SYS_READ = "read = [" + ", ".join(f'"{d}"' for d in SYS_DIRS) + "]\n"


@pytest.fixture
def cfg_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    d = tmp_path / "sandlock" / "profiles"
    d.mkdir(parents=True)
    return d


def test_load_profile_by_name_runs_confined(cfg_home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    (cfg_home / "build.toml").write_text(
        f'[program]\nexec = "/bin/sh"\nargs = ["-c", "true"]\nenv = {{ CC = "gcc" }}\n'
        f'clean_env = true\ncwd = "{work}"\n'
        f'[filesystem]\n{SYS_READ}write = ["{work}"]\n'
        '[limits]\nmemory = "1G"\nprocesses = 8\n[syscalls]\nextra_deny = []\n')
    assert sandlock.list_profiles() == ["build"]
    prof = read_profile("build")
    assert prof.command == ("/bin/sh", "-c", "true")
    sb = sandlock.load_profile("build")
    os.environ["SANDLOCK_TEST_MARKER"] = "host"
    try:
        r = sb.run(["/bin/sh", "-c", f'echo "$CC" > out; pwd; echo "M=$SANDLOCK_TEST_MARKER"; cat {secret}'])
    finally:
        del os.environ["SANDLOCK_TEST_MARKER"]
    assert (work / "out").read_text() == "gcc\n"
    assert r.stdout.decode().splitlines()[:2] == [str(work), "M="]
    assert b"s3cret" not in r.stdout
    assert sb.max_processes == 8 and sb.memory_bytes() == 1 << 30


def test_load_profile_overrides_and_ports(tmp_path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1',{port}),timeout=5)\n"
            " print('connected')\nexcept OSError: print('denied')")
    try:
        p = tmp_path / "net.toml"
        p.write_text(f'[filesystem]\n{SYS_READ}[network]\nallow = [":{port}"]\n')
        sb = sandlock.load_profile(path=str(p))
        assert sb.run(["/usr/bin/python3", "-c", code]).stdout == b"connected\n"
        sb = sandlock.load_profile(path=str(p), net_allow=[])
        assert sb.run(["/usr/bin/python3", "-c", code]).stdout == b"denied\n"
    finally:
        srv.close()


ERRORS = [
    ('fs_readable = ["/usr"]\n', "top-level key 'fs_readable'"),
    ("[filesytem]\nread = []\n", "unknown section [filesytem]"),
    ('[filesystem]\nreed = ["/usr"]\n', "unknown key 'reed' in [filesystem]"),
    ('[program]\nuid = 5\n', "[program] uid: not supported yet"),
    ('[network]\nallow = [1.5]\n', "expected a rule (string) or a port (integer)"),
    ("[network]\nallow = [70000]\n", "not in 1-65535"),
    ("[limits]\ngpu_devices = [300]\n", "gpu_devices"),
    ('[limits]\nprocesses = "many"\n', "[limits] processes: expected integer, got string"),
    ('[limits]\nmemory = "12X"\n', "'12X'"),
    ('[program]\nargs = ["x"]\n', "[program] args without exec"),
    ("[program]\nenv = { A = 1 }\n", "expected string, got integer"),
    ("[limits]\nprocesses = = 1\n", "Invalid value"),  # tomllib's own message
]


@pytest.mark.parametrize("text,needle", ERRORS, ids=[n for _, n in ERRORS])
def test_profile_errors(tmp_path, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ProfileError) as ei:
        sandlock.load_profile(path=str(p))
    assert ei.value.message.startswith(f"{p}: ")
    assert needle in str(ei.value)


def test_unsupported_keys_asking_for_nothing_are_accepted(tmp_path):
    p = tmp_path / "ok.toml"
    p.write_text(f"[filesystem]\n{SYS_READ}[program]\nno_supervisor = false\n"
                 "[http]\nallow = []\n")
    assert sandlock.load_profile(path=str(p)).run(["/bin/true"]).exit_code == 0


def test_names_and_missing_profiles(cfg_home):
    assert sandlock.list_profiles() == []
    (cfg_home / "b.toml").write_text("")
    (cfg_home / "a.toml").write_text("")
    (cfg_home / "notes.txt").write_text("")
    assert sandlock.list_profiles() == ["a", "b"]
    with pytest.raises(ProfileError, match="invalid profile name"):
        read_profile("../etc/passwd")
    with pytest.raises(ProfileError, match="missing.toml"):
        read_profile("missing")
    with pytest.raises(TypeError):
        read_profile()


def test_determinism_section(tmp_path):
    p = tmp_path / "det.toml"
    p.write_text(f'[filesystem]\n{SYS_READ}[determinism]\nrandom_seed = 42\n'
                 'time_start = "2000-01-01T00:00:00Z"\n')
    code = "import os, time; print(time.gmtime().tm_year, os.getrandom(8).hex())"
    a = sandlock.load_profile(path=str(p)).run(["/usr/bin/python3", "-c", code])
    b = sandlock.load_profile(path=str(p)).run(["/usr/bin/python3", "-c", code])
    assert a.stdout == b.stdout and a.stdout.startswith(b"2000 "), a.stderr
    p.write_text("[determinism]\ntime_start = 2000-01-01\n")
    with pytest.raises(ProfileError, match="dates and times are not supported"):
        read_profile(path=str(p))
    p.write_text('[determinism]\ntime_start = "yesterday"\n')
    with pytest.raises(ProfileError, match="det.toml"):
        sandlock.load_profile(path=str(p))


def test_knobs_section(tmp_path):
    p = tmp_path / "k.toml"
    p.write_text(f"[filesystem]\n{SYS_READ}[program]\nno_coredump = true\n"
                 "[limits]\nopen_files = 64\n[syscalls]\nextra_deny = [\"mkdir\"]\n")
    sb = sandlock.load_profile(path=str(p))
    r = sb.run(["/bin/sh", "-c", "echo $(ulimit -n) $(ulimit -c); mkdir /tmp/x-sandlock-k 2>&1"])
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "64 0", r.stderr
    assert "Operation not permitted" in r.stdout.decode() + r.stderr.decode()
