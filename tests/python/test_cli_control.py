"""Named runs from the CLI: `sandlock run --name`, then `ps`, `inspect`
and `kill` from other processes, over the per-run control socket."""
import json
import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import alive

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = str(BUILD / "sandlock")
SYS_RO = [a for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)
          for a in ("-r", d)]


def cli(env, *args, cwd=None):
    return subprocess.run([SANDLOCK, *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def start(env, name, *cmd):
    return start_named(env, name, SYS_RO, cmd)


def start_named(env, name, flags, cmd, cwd=None):
    """`sandlock run --name NAME FLAGS -- CMD`, once its control socket
    answers: (the Popen, its `inspect --json`).  Also test_cli_inspect_toml's."""
    p = subprocess.Popen([SANDLOCK, "run", "--name", name, *flags, "--", *cmd], env=env,
                         cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(1000):  # until its socket answers (bounded)
        r = cli(env, "inspect", name, "--json")
        if r.returncode == 0:
            return p, json.loads(r.stdout)
        if p.poll() is not None:
            pytest.fail("run --name exited: %r" % (p.communicate(),))
        time.sleep(0.01)
    p.kill()
    pytest.fail("the control socket never answered")


def test_ps_inspect_kill_from_another_process(runtime):
    d, env = runtime
    p, info = start(env, "job-1", "sh", "-c", "sleep 1000")
    try:
        assert info["name"] == "job-1" and info["command"] == ["sh", "-c", "sleep 1000"]
        assert info["running"] is True and info["uid"] == os.getuid()
        assert info["supervisor_pid"] == p.pid and info["init_pid"] != info["pid"]
        assert alive(info["pid"])
        ps = json.loads(cli(env, "ps", "--json").stdout)
        assert [x["name"] for x in ps] == ["job-1"]
        text = cli(env, "ps").stdout
        assert "job-1" in text and str(info["pid"]) in text
        # People read local time; JSON keeps Unix seconds.
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"]))
        row = [l for l in text.splitlines() if l.startswith("job-1 ")][0]
        assert when in row and str(info["started"]) not in row, row
        shown = cli(env, "inspect", "job-1").stdout
        assert "pid:            %d" % info["pid"] in shown
        # The directory and the socket are this user's only.
        sock = os.path.join(d, "sandlock", "job-1.sock")
        assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        assert cli(env, "kill", "job-1").returncode == 0
        assert p.wait(timeout=60) == 128 + 9
        assert not alive(info["pid"])
        assert not os.path.exists(sock)
        assert json.loads(cli(env, "ps", "--json").stdout) == []
        r = cli(env, "inspect", "job-1")
        assert r.returncode == 1 and "no running sandbox" in r.stderr
    finally:
        p.kill()
        p.wait()


def test_name_in_use_and_invalid_names(runtime):
    _d, env = runtime
    p, _info = start(env, "dup", "sleep", "1000")
    try:
        r = cli(env, "run", "--name", "dup", *SYS_RO, "--", "true")
        assert r.returncode == 125 and "already running" in r.stderr
    finally:
        cli(env, "kill", "dup")
        p.wait(timeout=60)
    for bad in ("", ".hidden", "a/b", "x" * 65):
        r = cli(env, "run", "--name", bad, *SYS_RO, "--", "true")
        # The builder refuses some names (empty, too long) before the
        # control socket does; either way a clear error naming it.
        assert r.returncode == 125 and ("invalid --name" in r.stderr or
                                        "name: must be" in r.stderr), r.stderr


def test_a_shared_control_directory_is_refused(runtime):
    d, env = runtime
    os.mkdir(os.path.join(d, "sandlock"), 0o755)
    os.chmod(os.path.join(d, "sandlock"), 0o755)
    r = cli(env, "run", "--name", "x", *SYS_RO, "--", "true")
    assert r.returncode == 125 and "not a directory private" in r.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_other_users_are_refused_by_peer_credentials(runtime):
    d, env = runtime
    p, info = start(env, "guarded", "sleep", "1000")
    try:
        sock = os.path.join(d, "sandlock", "guarded.sock")
        # Open both outer layers (directory and socket modes) so that only
        # the SO_PEERCRED check stands between another user and the run.
        os.chmod(d, 0o755)
        os.chmod(os.path.dirname(sock), 0o755)
        os.chmod(sock, 0o666)
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the other user
            os.close(rfd)
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)  # the control: it can reach the socket
                try:
                    s.sendall(b"kill\n")
                except BrokenPipeError:
                    pass  # refused before it read: the answer is queued anyway
                os.write(wfd, b"connected " + s.recv(200))
            except Exception as e:  # noqa: BLE001
                os.write(wfd, repr(e).encode())
            os._exit(0)
        os.close(wfd)
        got = os.read(rfd, 400)
        os.waitpid(pid, 0)
        os.close(rfd)
        os.chmod(d, 0o700)  # private again: our own client insists on it
        os.chmod(os.path.dirname(sock), 0o700)
        assert got.startswith(b"connected ") and b"permission denied" in got
        assert alive(info["pid"])  # the kill was refused
        assert json.loads(cli(env, "inspect", "guarded", "--json").stdout)["running"]
    finally:
        os.chmod(os.path.join(d, "sandlock"), 0o700)
        cli(env, "kill", "guarded")
        p.wait(timeout=60)
    assert not alive(info["pid"])


# A guest's view of a control socket: connect, ask, print the answer.
ASK = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.sendall(sys.argv[2].encode() + b"\\n")
    print("answer", s.recv(4000).decode().strip())
except OSError as e:
    print("refused", e.errno)
"""

# A guest that puts its own server in place of a run's control socket.
FORGE = """
import os, socket, sys
path = sys.argv[1]
os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
print("serving", flush=True)
s.settimeout(20)
while True:
    try:
        c, _ = s.accept()
    except OSError:
        break
    req = c.recv(100)
    c.sendall(b'{"ok":true}\\n' if req.startswith(b"kill") else
              b'{"name":"forged","pid":1,"init_pid":1,"supervisor_pid":1,"uid":0,'
              b'"started":0,"running":false,"command":["forged"]}\\n')
    c.close()
"""


def test_a_sandbox_cannot_reach_a_sibling_control_socket(runtime):
    d, env = runtime
    p, info = start(env, "victim", "sleep", "1000")
    try:
        sock = os.path.join(d, "sandlock", "victim.sock")
        out = subprocess.run(["/usr/bin/python3", "-c", ASK, sock, "inspect"], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        assert out.startswith("answer {") and '"victim"' in out  # works outside
        for req in ("inspect", "policy", "kill"):
            r = cli(env, "run", *SYS_RO, "-w", d, "--", "/usr/bin/python3", "-c", ASK, sock, req)
            assert r.stdout.strip() == "refused 13", (req, r.stdout, r.stderr)
        assert alive(info["pid"])
        assert json.loads(cli(env, "inspect", "victim", "--json").stdout)["running"]
    finally:
        p.kill()
        p.wait()


def test_a_sandboxed_server_in_place_of_a_run_is_not_believed(runtime):
    d, env = runtime
    for where in ("outside", "inside"):
        name = "victim-" + where
        p, info = start(env, name, "sleep", "1000")
        sock = os.path.join(d, "sandlock", name + ".sock")
        argv = ["/usr/bin/python3", "-c", FORGE, sock]
        if where == "inside":
            argv = [SANDLOCK, "run", *SYS_RO, "-w", d, "--", *argv]
        forger = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert forger.stdout.readline().strip() == "serving"
            shown = cli(env, "inspect", name, "--json")
            if where == "outside":
                # The same user outside any sandbox is trusted: this only
                # shows the forgery is real (kill "succeeds", the run goes on).
                kill = cli(env, "kill", name)
                assert kill.returncode == 0 and '"forged"' in shown.stdout
                assert alive(info["pid"])
            else:
                # The guest's server is passed over (said so) and the run
                # is reached by its abstract name: the real one answers.
                assert "not served by a sandlock run" in shown.stderr
                assert json.loads(shown.stdout)["name"] == name
                # (the forger's own sandbox is listed too, as sandbox-PID)
                names = [x["name"] for x in json.loads(cli(env, "ps", "--json").stdout)]
                assert name in names and all(n == name or n.startswith("sandbox-")
                                             for n in names), names
                kill = cli(env, "kill", name)
                assert kill.returncode == 0, kill.stderr
                assert p.wait(timeout=60) == 128 + 9
        finally:
            forger.kill()
            forger.wait()
            p.kill()
            p.wait()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make another user's directory")
def test_a_control_directory_of_another_user_is_passed_over(runtime):
    d, env = runtime
    os.mkdir(os.path.join(d, "sandlock"), 0o700)
    os.chown(os.path.join(d, "sandlock"), 65534, 65534)  # made first by someone else
    tmp = "/tmp/sandlock-%d" % os.getuid()  # the next candidate (no /run/user/0 here)
    existed = os.path.exists(tmp)
    p = None
    try:
        p, info = start(env, "fallback", "sleep", "1000")
        assert "belongs to another user" in cli(env, "run", "--name", "x", "--", "true").stderr
        assert info["name"] == "fallback"
        # (other runs of this user share /tmp/sandlock-UID: only ours counted)
        assert "fallback" in [x["name"] for x in json.loads(cli(env, "ps", "--json").stdout)]
        assert cli(env, "kill", "fallback").returncode == 0
        assert p.wait(timeout=60) == 128 + 9
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        if not existed:
            try:
                os.rmdir(tmp)
            except OSError:
                pass


# A guest that deletes a control socket file it can write, then tries the
# run's abstract name.
DELETE = """
import os, socket, sys
os.unlink(sys.argv[1])
print("deleted", not os.path.exists(sys.argv[1]))
for name in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\\0" + name)
        s.sendall(b"inspect\\n")
        print("answer", s.recv(4000).decode().strip())
    except OSError as e:
        print("refused", e.errno)
"""


def abstract_names(name):
    with open("/proc/net/unix") as f:
        return [line.split()[-1][1:] for line in f
                if line.split()[-1].startswith("@sandlock-%d-" % os.getuid())
                and line.split()[-1].endswith("/" + name)]


def test_a_deleted_control_socket_does_not_hide_the_run(runtime):
    """A guest granted -w over the control directory can delete a run's
    socket file: the run also listens on an abstract name no guest can
    delete (nor connect to), and ps/inspect/kill fall back to it."""
    d, env = runtime
    p, info = start(env, "victim", "sleep", "1000")
    try:
        sock = os.path.join(d, "sandlock", "victim.sock")
        names = abstract_names("victim")
        assert len(names) == 1
        ask = ["/usr/bin/python3", "-c", DELETE, sock, names[0]]
        r = cli(env, "run", *SYS_RO, "-w", d, "--", *ask)
        lines = r.stdout.splitlines()
        assert lines[0] == "deleted True", r.stderr  # the deletion is real
        assert lines[1] == "refused 1", lines  # EPERM: outside the sandbox
        assert not os.path.exists(sock)
        # outside, the abstract name answers (the control for the refusal)
        s = socket.socket(socket.AF_UNIX)
        s.connect("\0" + names[0])
        s.sendall(b"inspect\n")
        assert '"victim"' in s.recv(4000).decode()
        s.close()
        assert [x["name"] for x in json.loads(cli(env, "ps", "--json").stdout)] == ["victim"]
        assert json.loads(cli(env, "inspect", "victim", "--json").stdout)["running"]
        assert cli(env, "kill", "victim").returncode == 0
        assert p.wait(timeout=60) == 128 + 9
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def leftover(path, age):
    """A socket file nobody listens on, as a run killed with SIGKILL leaves
    it; its mtime age seconds ago."""
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.close()
    t = time.time() - age
    os.utime(path, (t, t))


def gone_pid():
    p = subprocess.Popen(["/bin/true"])
    p.wait()
    return p.pid


def test_the_sockets_of_dead_runs_are_swept(runtime):
    """A run whose caller is killed with SIGKILL cannot remove its socket
    file.  A run (at most one a minute) removes such a file once nobody
    listens on it, it is older than a minute and its init is gone; `ps`
    removes any file nobody listens on.  A live run's socket, and a fresh one (a run between
    its bind and its listen), stay."""
    d, env = runtime
    ctl = os.path.join(d, "sandlock")
    # The leftover is real: kill -9 an unnamed run's caller.
    p = subprocess.Popen([SANDLOCK, "run", *SYS_RO, "--", "sleep", "1000"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(1000):
        socks = [f for f in os.listdir(ctl) if f.endswith(".sock")] if os.path.isdir(ctl) else []
        if socks:
            break
        time.sleep(0.01)
    assert len(socks) == 1 and socks[0].startswith("sandbox-"), socks
    init = int(socks[0][len("sandbox-"):-len(".sock")])
    p.kill()
    p.wait()
    for _ in range(1000):
        if not alive(init):
            break
        time.sleep(0.01)
    dead = os.path.join(ctl, socks[0])
    assert os.path.exists(dead) and not alive(init)
    t = time.time() - 3600
    os.utime(dead, (t, t))
    fresh = os.path.join(ctl, "sandbox-%d.sock" % gone_pid())
    leftover(fresh, 0)
    named = os.path.join(ctl, "gone.sock")      # a CLI --name run's: no pid in it
    leftover(named, 3600)
    live, info = start(env, "live", "sleep", "1000")
    try:
        os.utime(os.path.join(ctl, "live.sock"), (t, t))   # old, but listened on
        # A run sweeps at most once a minute (the .swept stamp): a minute on,
        # the next run does.
        assert os.path.exists(dead)
        os.utime(os.path.join(ctl, ".swept"), (t, t))
        r = cli(env, "run", *SYS_RO, "--", "/bin/true")
        assert r.returncode == 0, r.stderr
        assert not os.path.exists(dead)
        assert os.path.exists(fresh) and os.path.exists(named)
        assert os.path.exists(os.path.join(ctl, "live.sock"))
        ps = json.loads(cli(env, "ps", "--json").stdout)
        assert [x["name"] for x in ps] == ["live"]
        assert not os.path.exists(named) and os.path.exists(fresh)
        socks = [f for f in os.listdir(ctl) if f.endswith(".sock")]
        assert sorted(socks) == sorted(["live.sock", os.path.basename(fresh)])
    finally:
        live.kill()
        live.wait()
