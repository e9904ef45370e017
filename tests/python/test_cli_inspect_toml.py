"""`sandlock inspect NAME --toml`: a running sandbox's policy as a profile,
which `run --profile-file` loads back into the same policy."""
import os
import subprocess
import tempfile

import pytest

from conftest import alive
from test_cli_control import SYS_RO, cli, start_named as start



@pytest.fixture
def dirs():
    """A readable dir with a file, a sibling dir not granted, a cwd elsewhere."""
    root = tempfile.mkdtemp(prefix="sandlock-toml-")
    for sub in ("granted", "other", "cwd"):
        os.mkdir(os.path.join(root, sub))
    for sub in ("granted", "other"):
        with open(os.path.join(root, sub, "f.txt"), "w") as f:
            f.write("in %s\n" % sub)
    os.chmod(root, 0o755)
    yield root
    subprocess.run(["rm", "-rf", root])


def stop(env, name, p):
    cli(env, "kill", name)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def test_inspect_toml_round_trips_the_policy(runtime, dirs):
    env = runtime[1]
    # a relative -r path: the profile must still mean it from another directory
    flags = SYS_RO + ["-r", "granted", "--max-open-files", "37", "--env", "MARK=from-profile"]
    p, info = start(env, "pol", flags, ["sleep", "1000"], cwd=dirs)
    try:
        r = cli(env, "inspect", "pol", "--toml")
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""  # everything given has a profile key
        text = r.stdout
        assert "[filesystem]" in text and "[limits]" in text and "open_files = 37" in text
        assert '"%s"' % os.path.join(dirs, "granted") in text
        prof = os.path.join(dirs, "cwd", "p.toml")
        with open(prof, "w") as f:
            f.write(text)
        probe = ("cat %s; ulimit -n; echo \"$MARK\"; cat %s || echo DENIED"
                 % (os.path.join(dirs, "granted", "f.txt"), os.path.join(dirs, "other", "f.txt")))
        # The control run, outside any sandbox, reads both files.
        bare = subprocess.run(["sh", "-c", probe], capture_output=True, text=True)
        assert "in other" in bare.stdout
        run = cli(env, "run", "--profile-file", prof, "--", "sh", "-c", probe,
                  cwd=os.path.join(dirs, "cwd"))
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert lines == ["in granted", "37", "from-profile", "DENIED"], run.stdout
        # Loaded and printed again, it is the same profile (same policy).
        q, _ = start(env, "pol2", ["--profile-file", prof], ["sleep", "1000"],
                     cwd=os.path.join(dirs, "cwd"))
        try:
            again = cli(env, "inspect", "pol2", "--toml")
            assert again.returncode == 0 and again.stdout == text
        finally:
            stop(env, "pol2", q)
    finally:
        stop(env, "pol", p)
    assert not alive(info["pid"])


def test_inspect_toml_names_what_a_profile_cannot_hold(runtime, dirs):
    env = runtime[1]
    p, _ = start(env, "lossy", SYS_RO + ["--timeout", "500"], ["sleep", "1000"], cwd=dirs)
    try:
        r = cli(env, "inspect", "lossy", "--toml")
        assert r.returncode == 0
        assert "# not expressible in a profile: --timeout" in r.stdout
        assert "warning" in r.stderr and "lossy" in r.stderr
    finally:
        stop(env, "lossy", p)


def test_inspect_toml_bad_use(runtime):
    r = cli(runtime[1], "inspect", "nobody-here", "--toml")
    assert r.returncode == 1 and r.stdout == ""
    assert "no running sandbox named 'nobody-here'" in r.stderr
    r = cli(runtime[1], "inspect", "x", "--json", "--toml")
    assert r.returncode == 125 and "Usage" in r.stderr
    r = cli(runtime[1], "inspect", "x", "--yaml")
    assert r.returncode == 125 and "'--yaml'" in r.stderr
