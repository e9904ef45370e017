"""Every sandbox is visible to `sandlock ps/inspect/kill/stop`, whoever
started it: a Python Sandbox (named, or "sandbox-PID" like its hostname),
as the reference's are.  The library serves the control socket
(src/run/control.c); the CLI only asks."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import sandlock
from conftest import SYSTEM, alive

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = str(BUILD / "sandlock")


@pytest.fixture
def xdg(runtime, monkeypatch):
    """This process's runs and the CLI share a private control directory."""
    d, env = runtime
    monkeypatch.setenv("XDG_RUNTIME_DIR", d)
    return d, env


def cli(env, *args):
    return subprocess.run([SANDLOCK, *args], env=env, capture_output=True, text=True,
                          timeout=60)


def listed(env):
    return {x["name"]: x for x in json.loads(cli(env, "ps", "--json").stdout)}


def wait_listed(env, name):
    for _ in range(500):
        runs = listed(env)
        if name in runs:
            return runs[name]
        time.sleep(0.01)
    pytest.fail("%s never listed: %r" % (name, listed(env)))


def test_a_python_sandbox_is_listed_inspected_and_killed(xdg):
    d, env = xdg
    assert "pybox" not in listed(env)  # the control: not yet
    sb = sandlock.Sandbox(fs_readable=SYSTEM, name="pybox", timeout=60)
    sb.spawn(["sleep", "1000"])
    try:
        info = wait_listed(env, "pybox")
        assert info["command"] == ["sleep", "1000"] and info["running"] is True
        assert info["pid"] == sb.pid and info["supervisor_pid"] == os.getpid()
        shown = json.loads(cli(env, "inspect", "pybox", "--json").stdout)
        assert shown["pid"] == sb.pid
        assert "pybox" in cli(env, "ps").stdout
        k = cli(env, "kill", "pybox")
        assert k.returncode == 0, k.stderr
        r = sb.wait(timeout=30)
        assert not r.success and r.reason == sandlock.ExitReason.KILLED
    finally:
        if sb.is_running:
            sb.kill()
            sb.wait()
    # Nothing of it is left: not listed, no socket file.
    assert "pybox" not in listed(env)
    assert "pybox.sock" not in os.listdir(os.path.join(d, "sandlock"))


def test_stop_sends_sigterm_and_the_command_cleans_up(xdg, tmpdir_path):
    d, env = xdg
    out = os.path.join(tmpdir_path, "cleaned")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[tmpdir_path], name="py-stop",
                          timeout=60)
    ready = os.path.join(tmpdir_path, "ready")
    sb.spawn(["sh", "-c", "trap 'echo bye > %s; exit 3' TERM; : > %s; "
              "while :; do sleep 0.05; done" % (out, ready)])
    try:
        wait_listed(env, "py-stop")
        for _ in range(1000):  # until the trap is set (bounded)
            if os.path.exists(ready):
                break
            time.sleep(0.01)
        s = cli(env, "stop", "-t", "20", "py-stop")
        assert s.returncode == 0, s.stderr
        r = sb.wait(timeout=30)
        assert r.exit_code == 3 and open(out).read() == "bye\n"
    finally:
        if sb.is_running:
            sb.kill()
            sb.wait()


def test_an_unnamed_sandbox_is_listed_under_its_hostname(xdg, tmpdir_path):
    d, env = xdg
    f = os.path.join(tmpdir_path, "hostname")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[tmpdir_path], timeout=60)
    sb.spawn(["sh", "-c", "hostname > %s.tmp && mv %s.tmp %s; sleep 1000" % (f, f, f)])
    try:
        for _ in range(500):  # (other runs of this process may be listed too)
            names = [n for n, x in listed(env).items() if x["pid"] == sb.pid]
            if names and os.path.exists(f):
                break
            time.sleep(0.01)
        assert len(names) == 1 and names[0].startswith("sandbox-"), listed(env)
        assert open(f).read().strip() == names[0]  # what the guest calls itself
        assert cli(env, "kill", names[0]).returncode == 0
        assert sb.wait(timeout=30).reason == sandlock.ExitReason.KILLED
    finally:
        if sb.is_running:
            sb.kill()
            sb.wait()


def test_two_runs_of_one_name_are_both_listed(xdg):
    d, env = xdg
    a = sandlock.Sandbox(fs_readable=SYSTEM, name="twin", timeout=60)
    b = sandlock.Sandbox(fs_readable=SYSTEM, name="twin", timeout=60)
    a.spawn(["sleep", "1000"])
    wait_listed(env, "twin")
    b.spawn(["sleep", "1000"])
    try:
        for _ in range(500):
            second = [n for n in listed(env) if n.startswith("twin.")]
            if second:
                break
            time.sleep(0.01)
        assert len(second) == 1 and listed(env)[second[0]]["pid"] == b.pid
        assert listed(env)["twin"]["pid"] == a.pid
        # The CLI's --name stays strict: a name in use fails its run.
        r = cli(env, "run", "--name", "twin", "-r", "/usr", "-r", "/lib", "-r", "/bin",
                "--", "true")
        assert r.returncode == 125 and "already running" in r.stderr
    finally:
        for sb in (a, b):
            sb.kill()
            sb.wait()


def test_a_sandboxed_process_cannot_kill_a_python_started_run(xdg):
    """A guest granted the control directory is refused by the run's
    server (it is more confined than the caller)."""
    d, env = xdg
    victim = sandlock.Sandbox(fs_readable=SYSTEM, name="victim", timeout=60)
    victim.spawn(["sleep", "1000"])
    try:
        info = wait_listed(env, "victim")
        # (The same request from outside ends a run: the first test.)
        attacker = sandlock.Sandbox(fs_readable=SYSTEM + [SANDLOCK], fs_writable=[d],
                                    env={"XDG_RUNTIME_DIR": d}, timeout=60)
        r = attacker.run([SANDLOCK, "kill", "victim"])
        assert r.exit_code != 0
        time.sleep(0.2)
        assert alive(info["pid"]) and victim.is_running
    finally:
        victim.kill()
        victim.wait()
