"""The shipped example profiles (examples/profiles/) run the real job they
are for, as their header says to run them: a C build, a pytest run, an
`npm ci` of a local dependency, an agent's shell command.  The projects
are the docs' fixtures (test_docs.FIXTURES)."""
import os
import shutil
import subprocess
import tempfile
import pytest

from test_docs import BUILD, REPO, fill

PROFILES = REPO / "examples" / "profiles"
SANDLOCK = str(BUILD / "sandlock")


@pytest.fixture
def project():
    d = tempfile.mkdtemp(prefix="sandlock-example-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run(profile, project, *cmd, extra=(), env=None):
    # A user's PATH of system tools (not this machine's pyenv shims).
    env = dict(env or os.environ, PATH="/usr/local/bin:/usr/bin:/bin")
    return subprocess.run([SANDLOCK, "run", "--profile-file", str(PROFILES / profile),
                           "-w", project, *extra, "--", *cmd], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_example_is_tested():
    tested = {"c-build.toml", "pytest.toml", "npm-ci.toml", "agent-shell.toml"}
    assert {p.name for p in PROFILES.glob("*.toml")} == tested


def test_c_build(project):
    fill(project, ["fixture=c-project"])
    r = run("c-build.toml", project, "make")
    assert r.returncode == 0, r.stderr
    assert subprocess.run([os.path.join(project, "app")], capture_output=True,
                          text=True).stdout == "42\n"


def test_pytest(project):
    fill(project, ["fixture=py-project"])
    env = dict(os.environ, SANDLOCK_EXAMPLE_SECRET="leaked")
    r = run("pytest.toml", project, "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
            env=env)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    # clean_env: the caller's variables do not reach the tests
    r = run("pytest.toml", project, "sh", "-c", "echo ${SANDLOCK_EXAMPLE_SECRET:-clean}",
            env=env)
    assert r.stdout == "clean\n", r.stderr


@pytest.mark.skipif(not shutil.which("npm", path="/usr/local/bin:/usr/bin:/bin"),
                    reason="npm is not installed")
def test_npm_ci(project, tmp_path):
    # A tarball dependency goes through npm's cache: in the run's TMPDIR,
    # not the user's ~/.npm (not granted: npm ci failed EACCES there).
    fill(project, ["fixture=npm-project"])
    home = tmp_path / "home"
    home.mkdir()
    r = run("npm-ci.toml", project, "npm", "ci", "--offline", env=dict(os.environ, HOME=str(home)))
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["node", "-e", "console.log(require('localdep'))"], cwd=project,
                       capture_output=True, text=True)
    assert r.stdout == "42\n"
    assert not os.path.islink(os.path.join(project, "node_modules", "localdep"))
    assert list(home.iterdir()) == []


def test_agent_shell(project, tmp_path):
    """The tool's command works in its workspace and reaches nothing else:
    a file of the user's outside it, the network, the caller's secrets."""
    secret = tmp_path / "id_rsa"
    secret.write_text("KEY")
    env = dict(os.environ, OPENAI_API_KEY="sk-test")
    script = ("echo done > result.txt; "
              "cat %s 2>/dev/null || echo secret-denied; "
              "echo ${OPENAI_API_KEY:-no-key}; "
              "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' "
              "2>/dev/null || echo net-denied" % secret)
    assert subprocess.run(["cat", str(secret)], capture_output=True).stdout == b"KEY"
    r = run("agent-shell.toml", project, "sh", "-c", script, extra=("-C", project), env=env)
    assert r.stdout.split() == ["secret-denied", "no-key", "net-denied"], r.stderr
    assert open(os.path.join(project, "result.txt")).read() == "done\n"
    if shutil.which("git"):  # git works in the workspace, without the user's ~/.gitconfig
        r = run("agent-shell.toml", project, "sh", "-c",
                "git init -q . && git add result.txt && git -c user.email=a@b.invalid "
                "-c user.name=agent commit -qm x && git log --oneline | wc -l",
                extra=("-C", project))
        assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
