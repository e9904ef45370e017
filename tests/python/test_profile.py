"""Python profiles (sandlock.profile): the CLI's files and schema, applied
to a Sandbox that runs real commands."""
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

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
    ('[limits]\nprocesses = "many"\n', "[limits] processes: expected an integer, got string"),
    ('[limits]\nmemory = "12X"\n', "'12X'"),
    ('[program]\nargs = ["x"]\n', "[program] args without exec"),
    ("[program]\nenv = { A = 1 }\n", "expected a string, got integer"),
    ("[limits]\nprocesses = = 1\n", "expected a value"),  # the TOML parser's own message
]


@pytest.mark.parametrize("text,needle", ERRORS, ids=[n for _, n in ERRORS])
def test_profile_errors(tmp_path, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ProfileError) as ei:
        sandlock.load_profile(path=str(p))
    # The library's words, at the key's line and column in the file.
    assert re.match(re.escape(str(p)) + r":\d+:\d+: ", ei.value.message), ei.value.message
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


def test_every_profile_key_feeds_a_field():
    """Each key of the library's schema (src/profile/schema.c) that this
    sandlock applies is named by a row of the field table (or is the
    [program] command), and no row names a key the schema lacks."""
    from sandlock import _fields

    src = (Path(__file__).resolve().parents[2] / "src/profile/schema.c").read_text()
    table = src[src.index("schema[] = {"):]
    rows = re.findall(r'\{ "(\w+)", "(\w+)", (\w+) \}', table[:table.index("{ NULL")])
    keys = {"%s %s" % (s, k) for s, k, conv in rows if conv != "v_unsupported"}
    assert len(keys) > 40
    fed = {f.profile for f in _fields.FIELDS if f.profile}
    assert keys - {"program exec", "program args"} == fed


def test_import_and_load_need_no_toml_module(tmp_path):
    """sandlock imports and loads a profile with tomllib and tomli both
    unimportable (CPython 3.8-3.10 have no tomllib): the library reads it."""
    p = tmp_path / "p.toml"
    p.write_text('[limits]\nmemory = "64M"\n[program]\nexec = "/bin/true"\n')
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('tomllib', 'tomli'):\n"
            "            raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import sandlock.profile as sp\n"
            "prof = sp.read_profile(path=%r)\n"
            "print(prof.sandbox_kwargs, prof.command)\n"
            "print(sorted(m for m in sys.modules if m.startswith('toml')))\n" % str(p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.stdout == "{'max_memory': 67108864} ('/bin/true',)\n[]\n", r.stderr


def test_normalized_values_reach_the_keywords(tmp_path):
    """What the library normalizes (sizes, time, paths beside the profile,
    mounts by mode) arrives as each keyword's value."""
    p = tmp_path / "n.toml"
    p.write_text('[determinism]\ntime_start = 946684800.25\n'
                 '[filesystem]\nread = ["rel", "/usr"]\nchroot = "/"\n'
                 'mount = ["/a:ah:ro", "/b:/bh", "/c:/ch:rw"]\n'
                 '[limits]\nmemory = "1.5G"\ndisk = 4096\n'
                 '[network]\nallow = [443, "example.com:80"]\n'
                 '[program]\nexec = "make"\nargs = ["-j2"]\nenv = { A = "1" }\n')
    prof = read_profile(path=str(p))
    kw = prof.sandbox_kwargs
    assert prof.command == ("make", "-j2")
    assert kw.pop("time_start") * 4 == 946684800 * 4 + 1  # exact: no float rounding
    assert kw == {"fs_readable": [str(tmp_path / "rel"), "/usr"], "chroot": "/",
                  "fs_mount": {"/b": "/bh", "/c": "/ch"},
                  "fs_mount_ro": {"/a": str(tmp_path / "ah")},
                  "max_memory": 3 << 29, "max_disk": 4096,
                  "net_allow": [443, "example.com:80"], "env": {"A": "1"}}
