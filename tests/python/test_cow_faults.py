"""The COW workdir under faults: a caller SIGKILLed mid-run leaves staging
storage that the next run sweeps (a live one never), a commit killed
half-way is rolled forward or cleaned by the next run or commit into the
same DIR, and two sandboxes committing into one DIR never both overwrite a
file and both report success."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import REPO, SYSTEM

SANDLOCK = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
READ = [a for p in SYSTEM + ["/dev/null"] for a in ("-r", p)]


@pytest.fixture
def tmp():
    """(work dir, private TMPDIR, fs_storage dir, a dir the runs may write
    their "started" marker to), removed afterwards."""
    top = tempfile.mkdtemp(prefix="sandlock-faults-", dir="/tmp")
    dirs = [os.path.join(top, n) for n in ("work", "tmp", "store", "sync")]
    for d in dirs:
        os.mkdir(d)
    try:
        yield dirs
    finally:
        shutil.rmtree(top, ignore_errors=True)


def cli(*args, cwd, env=None, **kw):
    return subprocess.run([SANDLOCK, "run"] + READ + list(args), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, **kw)


def wait_for(pred, secs=10):
    end = time.time() + secs
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def kill_mid_run(args, cwd, env, marker):
    """Start `sandlock run ARGS` (its command writes marker and sleeps),
    SIGKILL the CLI once marker exists, wait for the sandbox to die."""
    p = subprocess.Popen([SANDLOCK, "run"] + READ + args, cwd=cwd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: os.path.exists(marker)), "the run did not start"
    finally:
        p.kill()
        p.wait()


def storage_dirs(d, prefix):
    return sorted(n for n in os.listdir(d) if n.startswith(prefix))


STAGE_AND_SLEEP = "echo staged > f; : > %s; exec sleep 300"


def test_default_storage_of_a_sigkilled_caller_is_swept_by_the_next_run(tmp):
    work, tmpdir, _, sync = tmp
    env = dict(os.environ, TMPDIR=tmpdir)
    marker = os.path.join(sync, "started")
    kill_mid_run(["-w", sync, "--workdir", ".", "--", "sh", "-c", STAGE_AND_SLEEP % marker],
                 work, env, marker)
    left = storage_dirs(tmpdir, "sandlock-cow-")
    assert len(left) == 1 and os.path.isdir(os.path.join(tmpdir, left[0]))  # orphaned
    r = cli("--workdir", ".", "--", "true", cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert storage_dirs(tmpdir, "sandlock-cow-") == []
    assert os.listdir(work) == []  # the killed run committed nothing


def test_a_live_storage_is_never_swept(tmp):
    """While one run sleeps with staged changes, other runs with the same
    TMPDIR and the same fs_storage come and go: its layer stays and its
    commit still lands."""
    work, tmpdir, store, sync = tmp
    env = dict(os.environ, TMPDIR=tmpdir)
    marker = os.path.join(sync, "started")
    w2 = os.path.join(sync, "w2")
    os.mkdir(w2)
    live = subprocess.Popen([SANDLOCK, "run"] + READ + ["-w", sync, "--workdir", ".",
                            "--fs-storage", store, "--", "sh", "-c",
                            "echo staged > f; : > %s; sleep 1" % marker],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: os.path.exists(marker))
        layers = storage_dirs(store, "upper-")
        assert layers  # upper-X (and its lock, upper-X.lock)
        for _ in range(3):
            r = cli("--workdir", ".", "--fs-storage", store, "--", "true", cwd=w2, env=env)
            assert r.returncode == 0, r.stderr
            r = cli("--workdir", ".", "--", "true", cwd=w2, env=env)
            assert r.returncode == 0, r.stderr
            assert [n for n in layers if n not in storage_dirs(store, "upper-")] == []
        out, err = live.communicate(timeout=60)
        assert live.returncode == 0, err
    finally:
        if live.poll() is None:
            live.kill()
            live.wait()
    with open(os.path.join(work, "f")) as f:
        assert f.read() == "staged\n"
    assert storage_dirs(store, "upper-") == []


def test_fs_storage_layer_of_a_sigkilled_caller_is_swept_and_a_kept_one_is_not(tmp):
    work, tmpdir, store, sync = tmp
    env = dict(os.environ, TMPDIR=tmpdir)
    r = cli("--workdir", ".", "--fs-storage", store, "--on-exit", "keep", "--",
            "sh", "-c", "echo kept > k", cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    kept = storage_dirs(store, "upper-")
    assert len(kept) == 1  # the layer, no lock: kept on purpose
    marker = os.path.join(sync, "started")
    kill_mid_run(["-w", sync, "--workdir", ".", "--fs-storage", store, "--",
                  "sh", "-c", STAGE_AND_SLEEP % marker], work, env, marker)
    orphan = [n for n in storage_dirs(store, "upper-") if n not in kept]
    assert orphan  # upper-Y (and its lock file)
    r = cli("--workdir", ".", "--fs-storage", store, "--", "true", cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert storage_dirs(store, "upper-") == kept
    with open(os.path.join(store, kept[0], "k")) as f:
        assert f.read() == "kept\n"
