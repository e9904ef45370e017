"""Behaviour a script written for the reference SDK relies on (issue 25),
each test from the reference's documented behaviour: configuration
parsing and errors, the public sandlock.sandbox module, equality,
keyword-only parameters, frozen events."""
import dataclasses
import re
import os

import pytest

import sandlock
from conftest import SYSTEM


def test_sandbox_module_is_public():
    from sandlock.sandbox import BranchAction, Sandbox, StdioMode, parse_memory_size, parse_ports
    assert Sandbox is sandlock.Sandbox and BranchAction is sandlock.BranchAction
    assert StdioMode.PIPED == 1 and parse_memory_size("1K") == 1024
    assert parse_ports(["80"]) == [80]


def test_parse_ports_takes_comma_lists_dedupes_and_sorts():
    assert sandlock.parse_ports([80, "443", "8000-8002"]) == [80, 443, 8000, 8001, 8002]
    assert sandlock.parse_ports(["8080,9000-9002", 22, "22", "9001"]) == \
        [22, 8080, 9000, 9001, 9002]
    with pytest.raises(ValueError):
        sandlock.parse_ports(["80,x"])


def test_bind_specs_comma_lists_and_the_wildcard():
    sb = sandlock.Sandbox(net_allow_bind=["8081,8080", 8080, "9000-9001"])
    assert sb.net_allow_bind == ["8080", "8081", "9000", "9001"]  # a list, sorted, once each
    assert sandlock.Sandbox(net_allow_bind=["*", "*"]).net_allow_bind == ["*"]
    with pytest.raises(ValueError, match="wildcard"):
        sandlock.Sandbox(net_deny_bind=["*"])
    with pytest.raises(ValueError, match="wildcard"):
        sandlock.Sandbox(net_allow_bind=["*", 80])


def test_configuration_errors_are_early_and_runtime_errors():
    # at construction, and `except RuntimeError` catches them (the reference's type)
    with pytest.raises(RuntimeError, match="mutually exclusive"):
        sandlock.Sandbox(net_allow_bind=[80], net_deny_bind=[81])
    with pytest.raises(RuntimeError, match="64 bytes"):
        sandlock.Sandbox(name="x" * 65)
    with pytest.raises(RuntimeError):
        sandlock.Sandbox(max_memory="lots")
    try:
        sandlock.Sandbox(max_cpu=0)
    except RuntimeError as e:
        assert isinstance(e, ValueError) and isinstance(e, sandlock.SandlockError)


def test_list_fields_read_back_as_lists_and_sizes_as_given():
    sb = sandlock.Sandbox(fs_readable=("/usr", "/lib"), max_memory="512M", max_disk="1G",
                          cpu_cores=[0])
    assert sb.fs_readable == ["/usr", "/lib"] and isinstance(sb.fs_readable, list)
    assert sb.max_memory == "512M" and sb.memory_bytes() == 512 << 20
    assert sb.max_disk == "1G" and sb.cpu_cores == [0]


def test_hostnames_are_resolved_at_run_not_construction():
    # construction works offline (.invalid never resolves, RFC 6761) ...
    sb = sandlock.Sandbox(fs_readable=SYSTEM, net_allow=["no-such-host.invalid:443",
                                                           "tcp://also-not.invalid:80"])
    assert sb.net_allow == ["no-such-host.invalid:443", "tcp://also-not.invalid:80"]
    # ... while everything else is still checked there
    with pytest.raises(RuntimeError, match="mutually exclusive"):
        sandlock.Sandbox(net_allow=["no-such-host.invalid:443"], net_allow_bind=[80],
                         net_deny_bind=[81])
    # the run resolves, and a name that does not resolve fails it, naming the host
    with pytest.raises(sandlock.SandlockError, match="resolve"):
        sb.run(["/bin/true"])


def test_sandbox_equality_compares_configuration():
    a = sandlock.Sandbox(fs_readable=["/usr"], max_memory="1G")
    assert a == sandlock.Sandbox(fs_readable=["/usr"], max_memory="1G")
    assert a != sandlock.Sandbox(fs_readable=["/usr"], max_memory="2G")
    assert a != sandlock.Sandbox(fs_readable=["/lib"], max_memory="1G")
    b = sandlock.Sandbox(fs_readable=["/usr"], max_memory="1G")
    b.env["X"] = "1"  # env changed in place counts too
    assert a != b
    with pytest.raises(TypeError):
        hash(a)  # mutable and compared by value, as the reference's dataclass


def test_parameters_are_keyword_only():
    with pytest.raises(TypeError):
        sandlock.Sandbox(["/usr"])


def test_syscall_event_is_frozen():
    ev = sandlock.SyscallEvent("connect", "network", 5, host="1.2.3.4", port=80)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.port = 443
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ev.host
    assert ev == sandlock.SyscallEvent("connect", "network", 5, host="1.2.3.4", port=80)
    assert (ev.syscall, ev.port, ev.path) == ("connect", 80, None)


class _ReplayCtx:
    """A ctx without a live notification (a unit test, a replay): only
    read_path, as the handler spec's examples use it."""

    def __init__(self, path, nr=257):
        self.path, self.syscall_nr, self.args, self.pid = path, nr, (0,) * 6, 1

    def read_path(self, arg=None, max_len=4096):
        return self.path


def test_path_presets_decide_from_read_path_without_a_live_notification():
    import errno
    from sandlock.handler import HandlerCtx
    from sandlock.presets import PathAllowHandler, PathDenyHandler
    from sandlock import NotifAction
    cont, eperm, eacces = (NotifAction.continue_(), NotifAction.errno(errno.EPERM),
                           NotifAction.errno(errno.EACCES))
    deny = PathDenyHandler(deny=["/etc/*"], errno=errno.EPERM)
    assert deny.handle(_ReplayCtx("/etc/passwd")) == eperm
    assert deny.handle(_ReplayCtx("/tmp/x")) == cont
    assert deny.handle(_ReplayCtx(None)) == cont  # cannot classify: defer
    allow = PathAllowHandler(allow=["/tmp/sandbox/*"])
    assert allow.handle(_ReplayCtx("/tmp/sandbox/a")) == cont
    assert allow.handle(_ReplayCtx("/etc/passwd")) == eacces
    assert allow.handle(_ReplayCtx(None)) == eacces  # fail closed
    # a real HandlerCtx made outside a run has no live notification either
    ctx = HandlerCtx(id=1, pid=2, flags=0, syscall_nr=257, arch=0, instruction_pointer=0,
                     args=(0,) * 6)
    assert deny.handle(ctx) == cont and allow.handle(ctx) == eacces


FORK3 = """
import os, time
n = 0
for i in range(3):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(0.5); os._exit(0)
    n += 1
print(n, flush=True)
"""


def _restricting(**what):
    """A policy_fn that applies what on the command's first exec."""
    state = {"done": False}

    def policy(event, ctx):
        if event.syscall == "execve" and not state["done"]:
            state["done"] = True
            if "procs" in what:
                ctx.restrict_max_processes(what["procs"])
            if "memory" in what:
                ctx.restrict_max_memory(what["memory"])
            if "pid_ips" in what:
                ctx.restrict_pid_network(event.pid, what["pid_ips"])
        return False
    return policy


def test_policy_context_restrict_max_processes():
    from conftest import PY
    free = sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=_restricting()).run([PY, "-c", FORK3])
    assert free.stdout == b"3\n"  # the probe forks freely
    r = sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=_restricting(procs=2)).run(
        [PY, "-c", FORK3])
    assert r.stdout == b"1\n"  # python + one child
    with pytest.raises(ValueError):
        sandlock.PolicyContext(None).restrict_max_processes(0)


def test_policy_context_restrict_max_memory():
    from conftest import PY
    alloc = "a = bytearray(400 << 20)\nfor i in range(0, len(a), 4096): a[i] = 1\nprint('ok')"
    assert sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=_restricting()).run(
        [PY, "-c", alloc]).stdout == b"ok\n"
    r = sandlock.Sandbox(fs_readable=SYSTEM, policy_fn=_restricting(memory="128M")).run(
        [PY, "-c", alloc])
    assert not r.success and r.stdout != b"ok\n"


def test_policy_context_restrict_pid_network():
    import socket
    from conftest import PY
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    code = ("import socket\ns = socket.socket()\ns.settimeout(5)\n"
            "print(s.connect_ex(('127.0.0.1', %d)))" % port)
    net = ["tcp://127.0.0.1:%d" % port]
    try:
        r = sandlock.Sandbox(fs_readable=SYSTEM, net_allow=net,
                             policy_fn=_restricting()).run([PY, "-c", code])
        assert r.stdout == b"0\n"  # allowed by the rule
        r = sandlock.Sandbox(fs_readable=SYSTEM, net_allow=net,
                             policy_fn=_restricting(pid_ips=["127.0.0.2"])).run([PY, "-c", code])
        assert r.stdout == b"13\n"  # EACCES: this process may reach 127.0.0.2 only
    finally:
        srv.close()


def test_profiles_network_deny_and_port_remap_in_cli_and_python(tmp_path):
    import subprocess
    from conftest import REPO
    prof = tmp_path / "net.toml"
    prof.write_text('[network]\ndeny = ["10.0.0.0/8", "169.254.169.254:80"]\nport_remap = true\n')
    os_mode = 0o600
    prof.chmod(os_mode)
    sb = sandlock.load_profile(path=str(prof))
    assert sb.net_deny == ["10.0.0.0/8", "169.254.169.254:80"] and sb.port_remap is True
    # the CLI takes the same keys: the profile round-trips through inspect's printer
    cli = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
    r = subprocess.run([cli, "run", "--profile-file", str(prof), "-r", "/usr", "-r", "/lib",
                        "-r", "/lib64", "--", "/bin/true"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[network]\ndeny = ["example.com"]\n')
    bad.chmod(os_mode)
    r = subprocess.run([cli, "run", "--profile-file", str(bad), "--", "/bin/true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 125 and "deny" in r.stderr
    with pytest.raises(Exception):
        sandlock.load_profile(path=str(bad))


def test_relative_profile_paths_are_beside_the_profile(tmp_path, monkeypatch):
    import subprocess
    from conftest import REPO
    d = tmp_path / "proj"
    (d / "data").mkdir(parents=True)
    (d / "data" / "x").write_text("beside\n")
    prof = d / "p.toml"
    prof.write_text('[filesystem]\nread = ["data", "/usr", "/lib", "/lib64", "/bin"]\n')
    prof.chmod(0o600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the caller's cwd is not the profile's directory
    sb = sandlock.load_profile(path=str(prof))
    assert str(d / "data") in sb.fs_readable
    assert sb.run(["/bin/cat", str(d / "data" / "x")]).stdout == b"beside\n"
    cli = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
    r = subprocess.run([cli, "run", "--profile-file", str(prof), "--", "/bin/cat",
                        str(d / "data" / "x")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "beside\n", r.stderr


@pytest.mark.parametrize("text,phrase", [
    ('[program]\nexec = """/bin/true"""\n', "multi-line strings are not supported"),
    ('[limits]\nprocesses = 0x10\n', "hexadecimal, octal and binary integers are not supported"),
    ('filesystem.read = ["/usr"]\n', "dotted keys are not supported"),
    ('[program]\nenv = { a.b = "x" }\n', "dotted keys are not supported"),
    ('[[filesystem]]\nread = ["/usr"]\n', "arrays of tables ([[...]]) are not supported"),
    ('[determinism]\ntime_start = 2026-01-01T00:00:00Z\n', "dates and times are not supported"),
    ('[limits]\ncpu = inf\n', "inf and nan are not supported"),
])
def test_python_and_cli_refuse_the_same_toml(tmp_path, text, phrase):
    import subprocess
    from conftest import REPO
    prof = tmp_path / "p.toml"
    prof.write_text(text)
    prof.chmod(0o600)
    cli = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
    r = subprocess.run([cli, "run", "--profile-file", str(prof), "--", "/bin/true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 125 and phrase in r.stderr, r.stderr
    with pytest.raises(sandlock.profile.ProfileError, match=re.escape(phrase)):
        sandlock.load_profile(path=str(prof))


def test_the_grammar_check_leaves_ordinary_profiles_alone(tmp_path):
    prof = tmp_path / "ok.toml"
    prof.write_text('# a comment with """ and 0x10 and a.b = 1\n'
                    '[filesystem]\nread = ["/usr", "/lib.d", "a=b.c"]  # x.y = 1\n'
                    '[network]\nallow = ["1.2.3.4:80", "0x.example:443"]\n'
                    '[limits]\nmemory = "1.5G"\nprocesses = 10\n')
    prof.chmod(0o600)
    p = sandlock.profile.read_profile(path=str(prof))
    assert p.sandbox_kwargs["net_allow"] == ["1.2.3.4:80", "0x.example:443"]
