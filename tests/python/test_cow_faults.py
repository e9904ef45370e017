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


# ---------------- a commit killed half-way ----------------

# Test hook (cowjournal.c): each staged file's rename into place waits
# this long, so a kill lands in the middle of a commit and two commits
# overlap.
SLOW = {"SANDLOCK_TEST_COMMIT_DELAY_MS": "2"}
NFILES = 300


def leftovers(root):
    return [os.path.join(d, n) for d, dirs, files in os.walk(root)
            for n in dirs + files if n.startswith(".sandlock-commit-")]


def seed_files(work, nfiles=NFILES):
    os.mkdir(os.path.join(work, "sub"))
    for i in range(nfiles):
        with open(os.path.join(work, "sub" if i % 2 else "", "f%d" % i), "w") as f:
            f.write("old\n")


WRITE = ("for i in $(seq 0 %d); do d=.; [ $((i %% 2)) = 1 ] && d=sub; "
         "echo {tag} > $d/f$i; echo {tag} > $d/new$i; done")
WRITE_ALL = WRITE % (NFILES - 1)


def contents(work):
    out = {}
    for d, _, files in os.walk(work):
        for n in files:
            with open(os.path.join(d, n)) as f:
                out[os.path.relpath(os.path.join(d, n), work)] = f.read()
    return out


def test_a_commit_killed_half_way_is_cleaned_by_the_next_run(tmp):
    """kill -9 of the caller at several points of a commit: every name is
    fully old or fully new, and the next run on the directory removes
    every temporary the commit left (a journal lists them)."""
    work, tmpdir, _, _ = tmp
    env = dict(os.environ, TMPDIR=tmpdir, **SLOW)
    seed_files(work)
    left_any = False
    for delay in (0.0, 0.05, 0.15, 0.3, 0.5):
        p = subprocess.Popen([SANDLOCK, "run"] + READ + ["--workdir", ".", "--", "sh", "-c",
                             WRITE_ALL.format(tag="new")], cwd=work, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: leftovers(work) or p.poll() is not None, 30)
            time.sleep(delay)
        finally:
            p.kill()
            p.wait()
        left_any |= bool(leftovers(work))
        # What a killed commit leaves is the user's to read and remove,
        # even without root (the journal was once made mode 000).
        for f in leftovers(work):
            assert os.lstat(f).st_mode & 0o600 == 0o600, (f, oct(os.lstat(f).st_mode))
        got = contents(work)
        assert set(v for k, v in got.items() if not k.startswith(".sandlock-commit-")
                   and "/.sandlock-commit-" not in k) <= {"old\n", "new\n"}
        r = cli("--workdir", ".", "--", "true", cwd=work, env=env)
        assert r.returncode == 0, r.stderr
        assert leftovers(work) == []
        for k, v in contents(work).items():
            assert v in ("old\n", "new\n"), k
        # start over: every file old again, no new ones
        for k in list(contents(work)):
            if "new" in os.path.basename(k):
                os.unlink(os.path.join(work, k))
            else:
                with open(os.path.join(work, k), "w") as f:
                    f.write("old\n")
    assert left_any, "no kill landed inside a commit"


def test_two_sandboxes_committing_into_one_dir_never_both_overwrite(tmp):
    """Two runs change the same files and commit at the same moment: each
    file is committed by at most one of them (the other reports it as a
    conflict), and holds that one's content.  Repeated."""
    work, tmpdir, _, sync = tmp
    # A long window on few files: the two commits reach the same file
    # within it (without the commit lock both overwrite it).
    env = dict(os.environ, TMPDIR=tmpdir, SANDLOCK_TEST_COMMIT_DELAY_MS="40")
    seed_files(work, 16)
    for rnd in range(3):
        go = os.path.join(sync, "go%d" % rnd)
        procs = {}
        for tag in ("a", "b"):
            ready = os.path.join(sync, "ready-%s%d" % (tag, rnd))
            script = ((WRITE % 15).format(tag=tag + str(rnd)) + "; : > %s; while [ ! -e %s ]; do sleep 0.01; done"
                      % (ready, go))
            procs[tag] = subprocess.Popen(
                [SANDLOCK, "run"] + READ + ["-w", sync, "--workdir", ".", "--", "sh", "-c", script],
                cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = wait_for(lambda: all(os.path.exists(os.path.join(sync, "ready-%s%d" % (t, rnd)))
                                         for t in "ab"), 120)
            open(go, "w").close()
            out = {t: p.communicate(timeout=120) for t, p in procs.items()}
        finally:  # never leave a run behind (later tests count processes)
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
        assert ready, out
        got = contents(work)
        changed = {k for k in got if os.path.basename(k).startswith(("f", "new"))}
        committed = {}
        for t in "ab":
            conflicts = {l.split()[-1] for l in out[t][1].splitlines()
                         if "not committed" in l}
            assert procs[t].returncode in (0, 125), out[t][1]
            committed[t] = {c for c in changed if c not in conflicts}
        both = committed["a"] & committed["b"]
        assert not both, ("both reported committed: %s" % sorted(both)[:5], out["a"][1][-600:], out["b"][1][-600:])
        for t in "ab":
            for k in committed[t]:
                assert got[k] == "%s%d\n" % (t, rnd), (k, got[k], t)
        assert leftovers(work) == []
