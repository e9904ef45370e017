"""The copy-on-write workdir from Python and the CLI: real programs (tar,
git, dd, sh, python3) run against a workdir; ABORT leaves the tree
byte-identical, COMMIT applies exactly the dry run's change list, max_disk
gives ENOSPC, and hostile probes (shown to work outside first) never reach
the real tree before commit."""
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile

import pytest

import sandlock
from conftest import PY, REPO, SYSTEM

SANDLOCK = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
READ = SYSTEM + ["/dev/zero", "/dev/null", "/dev/urandom"]


def digest(root):
    """Every entry under root: path -> (type, mode, sha256 / link target)."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("l", st.st_mode, os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("d", st.st_mode, "")
            else:
                with open(p, "rb") as f:
                    out[rel] = ("f", st.st_mode, hashlib.sha256(f.read()).hexdigest())
    return out


def diff(before, after):
    """The A/M/D set that turns tree digest before into after."""
    ch = {("A", p) for p in after if p not in before}
    ch |= {("D", p) for p in before if p not in after}
    ch |= {("M", p) for p in after if p in before and after[p] != before[p]}
    return ch


@pytest.fixture
def work():
    d = tempfile.mkdtemp(prefix="sandlock-cow-", dir="/tmp")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def box(workdir, **kw):
    kw.setdefault("timeout", 60)
    return sandlock.Sandbox(fs_readable=READ + kw.pop("extra_read", []), workdir=workdir,
                            cwd=workdir, **kw)


def seed(work):
    os.makedirs(os.path.join(work, "src", "deep"))
    for i in range(5):
        with open(os.path.join(work, "src", "f%d.txt" % i), "w") as f:
            f.write("original %d\n" % i)
    with open(os.path.join(work, "src", "deep", "keep"), "w") as f:
        f.write("keep\n")
    os.symlink("src/f0.txt", os.path.join(work, "link"))


def make_tarball(path, n=200):
    """~n small files in nested dirs, some overwriting seed()'s files."""
    with tarfile.open(path, "w") as t:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
        for i in range(n):
            add("pkg/d%d/file%03d.c" % (i % 10, i), ("int x%d = %d;\n" % (i, i)).encode())
        add("src/f1.txt", b"from the tarball\n")


@pytest.fixture
def tarball():
    fd, p = tempfile.mkstemp(prefix="sandlock-cow-", suffix=".tar", dir="/tmp")
    os.close(fd)
    make_tarball(p)
    try:
        yield p
    finally:
        os.unlink(p)


UNTAR_AND_EDIT = ("tar xf {t} && rm src/f2.txt && mv src/f3.txt src/moved.txt && "
                  "echo more >> src/f4.txt && find . -type f | wc -l")


def test_untar_abort_leaves_the_tree_byte_identical(work, tarball):
    seed(work)
    before = digest(work)
    r = box(work, on_exit=sandlock.BranchAction.ABORT, extra_read=[tarball]).run(
        ["sh", "-c", UNTAR_AND_EDIT.format(t=tarball)])
    assert r.success, r.stderr
    assert int(r.stdout) == 205  # the guest saw its 200 files, next to the seeded ones
    assert digest(work) == before


def test_untar_commit_applies_exactly_the_dry_run_changes(work, tarball):
    seed(work)
    before = digest(work)
    sb = box(work, extra_read=[tarball])
    cmd = ["sh", "-c", UNTAR_AND_EDIT.format(t=tarball)]
    dry = sb.dry_run(cmd)
    assert isinstance(dry, sandlock.DryRunResult) and dry.success, dry.stderr
    assert digest(work) == before  # a dry run applies nothing
    listed = {(c.kind, c.path) for c in dry.changes}
    assert ("D", "src/f2.txt") in listed and ("M", "src/f1.txt") in listed
    assert ("A", "src/moved.txt") in listed and ("D", "src/f3.txt") in listed
    assert len([c for c in dry.changes if c.kind == "A"]) == 200 + 11 + 1  # files, dirs, moved
    r = sb.run(cmd)
    assert r.success
    assert diff(before, digest(work)) == listed


GIT = ("git init -q . && git -c user.name=t -c user.email=t@example.com add -A && "
       "git -c user.name=t -c user.email=t@example.com commit -q -m init && git log --oneline")


def test_git_init_add_commit_abort_then_commit(work):
    seed(work)
    before = digest(work)
    env = {"HOME": work, "GIT_CONFIG_NOSYSTEM": "1"}
    sb = box(work, env=env, on_exit="abort", fs_writable=["/dev/null"])
    r = sb.run(["sh", "-c", GIT])
    assert r.success, r.stderr
    assert b"init" in r.stdout
    assert digest(work) == before
    sb.on_exit = sandlock.BranchAction.COMMIT
    dry = sb.dry_run(["sh", "-c", GIT])
    assert dry.success and any(c.path.startswith(".git/objects/") for c in dry.changes)
    assert digest(work) == before
    assert sb.run(["sh", "-c", GIT]).success
    after = digest(work)
    # The same kinds of paths as the dry run (object names differ by time).
    assert {p for k, p in diff(before, after) if not p.startswith(".git/objects/")} == \
        {c.path for c in dry.changes if not c.path.startswith(".git/objects/")}
    log = subprocess.run(["git", "-C", work, "log", "--oneline"], capture_output=True, text=True,
                         env={"HOME": work, "PATH": "/usr/bin:/bin"})
    assert "init" in log.stdout


def test_a_second_sandbox_on_the_same_workdir_conflicts_instead_of_overwriting(work):
    with open(os.path.join(work, "shared"), "w") as f:
        f.write("host\n")
    store = tempfile.mkdtemp(prefix="sandlock-cow-store-", dir="/tmp")
    try:
        script = "echo {0} > shared; echo {0} > only{0}; echo ready; read x || true"
        piped = sandlock.StdioMode.PIPED
        pa = box(work, fs_storage=store).popen(["sh", "-c", script.format("a")],
                                               stdin=piped, stdout=piped)
        pb = box(work, fs_storage=store).popen(["sh", "-c", script.format("b")],
                                               stdin=piped, stdout=piped)
        assert pa.stdout.readline() == b"ready\n" and pb.stdout.readline() == b"ready\n"
        pa.stdin.close()
        assert pa.wait().success
        assert open(os.path.join(work, "shared")).read() == "a\n"
        pb.stdin.close()
        with pytest.raises(sandlock.BranchConflictError) as ei:
            pb.wait()
        assert [c.path for c in ei.value.conflicts] == ["shared"]
        assert ei.value.kept and os.path.exists(os.path.join(ei.value.kept, "shared"))
        # b's other change went in; a's write was not overwritten.
        assert open(os.path.join(work, "shared")).read() == "a\n"
        assert sorted(os.listdir(work)) == ["onlya", "onlyb", "shared"]
    finally:
        shutil.rmtree(store, ignore_errors=True)


def test_max_disk_hit_mid_write_gives_enospc_and_nothing_is_committed(work):
    with open(os.path.join(work, "keep"), "w") as f:
        f.write("keep\n")
    before = digest(work)
    r = box(work, max_disk="256K").run(
        ["sh", "-c", "dd if=/dev/zero of=big bs=64k count=16 && echo done"])
    assert not r.success and b"No space left on device" in r.stderr
    assert b"done" not in r.stdout
    assert digest(work) == before  # on_error ABORT: nothing of it reached the tree


def test_max_disk_bounds_what_a_commit_can_bring(work):
    r = box(work, max_disk="256K", on_error="commit").run(
        ["sh", "-c", "dd if=/dev/zero of=big bs=64k count=16; echo more >> big; "
                     "truncate -s 10M big2"])
    assert not r.success
    assert os.path.getsize(os.path.join(work, "big")) == 256 * 1024
    # A full layer has no room for a new name either (each costs a block).
    assert not os.path.exists(os.path.join(work, "big2"))
    assert r.stderr.count(b"No space left on device") >= 2


# Hostile probes: each writes the real file by a route a path check cannot
# see.  Run outside the sandbox first (on a copy) to show it works there.
PROBES = {
    "fd_before_rename": (
        "import os\n"
        "fd = os.open('victim', os.O_WRONLY)\n"
        "os.rename('victim', 'renamed')\n"
        "os.write(fd, b'EVIL')\n"
        "os.rename('renamed', 'victim')\n"
        "print(open('victim').read()[:4])\n"),
    "mmap_shared": (
        "import mmap, os\n"
        "fd = os.open('victim', os.O_RDWR)\n"
        "m = mmap.mmap(fd, 4, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)\n"
        "m[:4] = b'EVIL'\n"
        "m.flush(); m.close()\n"
        "print(open('victim').read()[:4])\n"),
    "opath_reopen": (
        "import os\n"
        "p = os.open('victim', os.O_PATH)\n"
        "try:\n"
        "    fd = os.open('/proc/self/fd/%d' % p, os.O_WRONLY)\n"
        "    os.write(fd, b'EVIL')\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n"
        "print(open('victim').read()[:4])\n"),
    "rdonly_reopen": (
        "import os\n"
        "r = os.open('victim', os.O_RDONLY)\n"
        "try:\n"
        "    fd = os.open('/proc/self/fd/%d' % r, os.O_RDWR)\n"
        "    os.write(fd, b'EVIL')\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n"
        "print(open('victim').read()[:4])\n"),
}


@pytest.mark.parametrize("probe", sorted(PROBES))
def test_hostile_write_never_reaches_the_real_workdir(work, probe):
    outside = tempfile.mkdtemp(prefix="sandlock-cow-probe-", dir="/tmp")
    try:
        for d in (work, outside):
            with open(os.path.join(d, "victim"), "w") as f:
                f.write("good content\n")
        p = subprocess.run([PY, "-c", PROBES[probe]], cwd=outside, capture_output=True)
        assert p.returncode == 0, p.stderr
        assert open(os.path.join(outside, "victim")).read().startswith("EVIL")  # works outside
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    before = digest(work)
    r = box(work, on_exit="abort").run([PY, "-c", PROBES[probe]])
    assert r.exit_code == 0, r.stderr
    # The write went to the staged copy (the guest sees it), or was refused.
    want = {"fd_before_rename": b"EVIL\n", "mmap_shared": b"EVIL\n",
            "opath_reopen": b"refused 13\ngood\n", "rdonly_reopen": b"refused 13\ngood\n"}
    assert r.stdout == want[probe]
    assert digest(work) == before


def test_bad_values_are_refused_naming_them(work):
    with pytest.raises(sandlock.PolicyValueError, match="bogus"):
        box(work, on_exit="bogus")
    with pytest.raises(sandlock.PolicyValueError, match="max_disk"):
        box(work, max_disk="lots")
    with pytest.raises(sandlock.PolicyError, match="nowhere"):
        box(os.path.join(work, "nowhere"))
    with pytest.raises(sandlock.PolicyValueError, match="workdir"):
        sandlock.Sandbox(fs_readable=READ).dry_run(["true"])


def sandlock_cli(*args, cwd):
    return subprocess.run([SANDLOCK, "run"] + [a for p in READ for a in ("-r", p)] + list(args),
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def test_cli_dry_run_lists_the_changes_and_applies_nothing(work):
    seed(work)
    before = digest(work)
    r = sandlock_cli("--workdir", ".", "--dry-run", "--",
                     "sh", "-c", "echo x > new; rm src/f0.txt; echo y >> src/f1.txt", cwd=work)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["M src/f1.txt", "D src/f0.txt", "A new"] or \
        sorted(r.stdout.splitlines()) == ["A new", "D src/f0.txt", "M src/f1.txt"]
    assert digest(work) == before
    j = sandlock_cli("--workdir", ".", "--dry-run", "--json", "--", "sh", "-c", "echo x > new",
                     cwd=work)
    import json
    assert json.loads(j.stderr.splitlines()[-1])["changes"] == [{"kind": "A", "path": "new"}]
    assert digest(work) == before
    c = sandlock_cli("--workdir", ".", "--", "sh", "-c", "echo x > new", cwd=work)
    assert c.returncode == 0 and open(os.path.join(work, "new")).read() == "x\n"


def test_cli_and_python_profiles_take_the_cow_keys(work):
    prof = work + "-profile.toml"
    with open(prof, "w") as f:
        f.write('[config]\nworkdir = "%s"\n[filesystem]\nread = %s\non_exit = "abort"\n'
                '[limits]\ndisk = "64K"\n' % (work, str(READ).replace("'", '"')))
    try:
        r = subprocess.run([SANDLOCK, "run", "--profile-file", prof, "--", "sh", "-c",
                            "echo x > a; dd if=/dev/zero of=b bs=64k count=2"],
                           cwd=work, capture_output=True, text=True, timeout=60)
        assert "No space left on device" in r.stderr
        assert os.listdir(work) == []  # aborted
        sb = sandlock.load_profile(path=prof, cwd=work)
        # The library normalizes sizes: the profile's "64K" reads back in bytes.
        assert sb.on_exit is sandlock.BranchAction.ABORT and sb.max_disk == 64 << 10
        res = sb.dry_run(["sh", "-c", "echo x > a"])
        assert [(c.kind, c.path) for c in res.changes] == [("A", "a")]
    finally:
        os.unlink(prof)


def test_keep_leaves_the_staged_layer_in_fs_storage(work):
    store = tempfile.mkdtemp(prefix="sandlock-cow-store-", dir="/tmp")
    try:
        before = digest(work)
        r = box(work, fs_storage=store, on_exit=sandlock.BranchAction.KEEP).run(
            ["sh", "-c", "echo staged > f"])
        assert r.success
        assert digest(work) == before
        layers = [d for d in os.listdir(store) if d.startswith("upper-")]
        assert len(layers) == 1
        assert open(os.path.join(store, layers[0], "f")).read() == "staged\n"
    finally:
        shutil.rmtree(store, ignore_errors=True)


def test_symlinks_are_followed_in_the_merged_view(work):
    """A real link into a directory holding a staged file, an absolute
    link into workdir, a write through a real link, a staged link: the
    guest sees its own writes through all of them (before cowpath.c it
    read the real file, got EXDEV, or broke the commit)."""
    seed(work)
    os.symlink(os.path.join(work, "src", "f1.txt"), os.path.join(work, "abs"))
    os.symlink("src", os.path.join(work, "srcl"))
    script = ("echo new > src/f0.txt; echo new1 > src/f1.txt; cat link; cat abs; "
              "echo g > srcl/g; cat src/g; ln -s srcl/g s; cat s")
    r = box(work, on_exit=sandlock.BranchAction.COMMIT).run(["sh", "-c", script])
    assert r.success, r.stderr
    assert r.stdout == b"new\nnew1\ng\ng\n"
    assert os.readlink(os.path.join(work, "srcl")) == "src"
    assert open(os.path.join(work, "src", "g")).read() == "g\n"
    assert os.readlink(os.path.join(work, "s")) == "srcl/g"


HELLO_C = '#include <stdio.h>\nint main(int c, char **v) { printf("hello %s\\n", c > 1 ? v[1] : v[0]); return 0; }\n'
MAKEFILE = ("all: prog\nprog: hello.o\n\t$(CC) -o $@ $^\nhello.o: hello.c\n\t$(CC) -c -o $@ $<\n"
            "test: prog\n\t./prog world\n")


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("make"), reason="no cc/make")
def test_make_builds_and_runs_a_program_then_commit_applies_the_dry_run(work):
    """The README's workflow: `make test` compiles (gcc's temporaries in a
    writable TMPDIR) and runs the program it just built, which exists only
    in the staged layer; the dry run lists it, and the commit brings it."""
    for name, text in (("hello.c", HELLO_C), ("Makefile", MAKEFILE)):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    before = digest(work)
    tmp = tempfile.mkdtemp(prefix="sandlock-cc-tmp-")
    try:
        sb = box(work, fs_writable=[tmp], env={"TMPDIR": tmp, "PATH": "/usr/bin:/bin"})
        dry = sb.dry_run(["make", "test"])
        assert dry.success, dry.stderr
        assert b"hello world\n" in dry.stdout
        assert {(c.kind, c.path) for c in dry.changes} == {("A", "hello.o"), ("A", "prog")}
        assert digest(work) == before
        r = sb.run(["make", "test"])
        assert r.success, r.stderr
        assert diff(before, digest(work)) == {("A", "hello.o"), ("A", "prog")}
        out = subprocess.run([os.path.join(work, "prog"), "again"], capture_output=True)
        assert out.stdout == b"hello again\n"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.skipif(not shutil.which("cc"), reason="no cc")
def test_vfork_and_posix_spawn_of_a_staged_program_leave_the_parent_intact(work):
    """Python's subprocess (vfork) and os.posix_spawn (CLONE_VM) run the
    child in the parent's memory: the path rewrite must be undone before
    the parent runs on (execpath.c).  The bytes object that was both the
    path and argv[0], and the argv list, are checked after each spawn."""
    tmp = tempfile.mkdtemp(prefix="sandlock-cc-tmp-")
    with open(os.path.join(work, "hello.c"), "w") as f:
        f.write(HELLO_C)
    code = (
        "import os, subprocess\n"
        "subprocess.run(['cc', '-o', 'prog', 'hello.c'], check=True)\n"
        "arg = b'./prog'\n"
        "r = subprocess.run([arg], capture_output=True)\n"
        "print(r.returncode, r.stdout, arg, arg == b'./prog')\n"
        "name = './prog'\n"
        "r = subprocess.run([name, 'x'], capture_output=True)\n"
        "print(r.returncode, r.stdout, name)\n"
        "argv = ['./prog', 'spawned']\n"
        "pid = os.posix_spawn('./prog', argv, os.environ)\n"
        "print(os.waitpid(pid, 0)[1], argv)\n"
        "os.rename('prog', 'p')\n"
        "print([subprocess.run(['./p', str(i)], capture_output=True).stdout for i in range(3)])\n")
    try:
        # -u: the programs it spawns write to the same pipe, unbuffered.
        r = box(work, fs_writable=[tmp], env={"TMPDIR": tmp, "PATH": "/usr/bin:/bin"},
                on_exit="abort").run([PY, "-u", "-c", code])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert r.success, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines[:2] == ["0 b'hello ./prog\\n' b'./prog' True", "0 b'hello x\\n' ./prog"]
    # The spawned child and its parent write to the same stdout: any order.
    assert sorted(lines[2:4]) == ["0 ['./prog', 'spawned']", "hello spawned"]
    # A one-letter name: Python's copy of the path sits 16 bytes before
    # the argv array, so only the short /dev/fd form fits.
    assert lines[4] == "[b'hello 0\\n', b'hello 1\\n', b'hello 2\\n']"


def test_a_writable_tmpdir_stays_writable_with_a_workdir(work, monkeypatch):
    """The staging storage goes where no grant reaches (not $TMPDIR when
    that is granted): Landlock cannot take a subtree out of a grant, and a
    storage inside the writable TMPDIR left TMPDIR itself unwritable."""
    tmp = tempfile.mkdtemp(prefix="sandlock-tmpdir-")
    try:
        monkeypatch.setenv("TMPDIR", tmp)
        r = box(work, fs_writable=[tmp], env={"TMPDIR": tmp}, on_exit="abort").run(
            ["sh", "-c", "mktemp && echo ok > %s/direct && cat %s/direct" % (tmp, tmp)])
        assert r.success, r.stderr
        assert r.stdout.decode().splitlines()[1:] == ["ok"]
        assert not [n for n in os.listdir(tmp) if n.startswith("sandlock-cow-")]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


UPPER_PROBE = (
    "import os\n"
    "open('staged.txt', 'w').write('mine\\n')\n"
    "fd = os.open('staged.txt', os.O_RDONLY)\n"
    "where = os.path.dirname(os.readlink('/proc/self/fd/%d' % fd))\n"
    "print('elsewhere' if where != os.getcwd() else 'here')\n"
    "try:\n"
    "    w = os.open('/proc/self/fd/%d' % fd, os.O_RDWR)\n"
    "    os.write(w, b'EVIL')\n"
    "    print('wrote')\n"
    "except OSError as e:\n"
    "    print('refused', e.errno)\n")


def test_hostile_the_staged_layer_is_readable_never_writable_by_its_path(work):
    """Landlock grants the guest's upper layer read + execute (to run what
    it built), never write: a staged file reopened read-write through its
    fd's magic link (naming the layer, not workdir) is refused, so writes
    keep going through the supervisor (max_disk, commit).  The probe
    writes outside first."""
    outside = tempfile.mkdtemp(prefix="sandlock-cow-probe-")
    try:
        p = subprocess.run([PY, "-c", UPPER_PROBE], cwd=outside, capture_output=True)
        assert p.stdout == b"here\nwrote\n", p.stderr
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    r = box(work, on_exit="abort").run([PY, "-c", UPPER_PROBE])
    assert r.stdout == b"elsewhere\nrefused 13\n", r.stderr
    assert os.listdir(work) == []


def test_cli_exits_125_when_the_commit_leaves_a_change_out(work):
    """A real file changed outside during the run is not overwritten by the
    commit; the CLI says so and exits 125 instead of the command's 0, so
    `sandlock run --workdir . -- make && deploy` stops there."""
    with open(os.path.join(work, "f"), "w") as f:
        f.write("real\n")
    sync = tempfile.mkdtemp(prefix="sandlock-cow-sync-")
    script = ("echo guest >> f; touch %s/ready; "
              "while [ ! -e %s/go ]; do sleep 0.05; done" % (sync, sync))
    p = subprocess.Popen([SANDLOCK, "run"] + [a for d in READ for a in ("-r", d)] +
                         ["-w", sync, "--workdir", ".", "--", "sh", "-c", script],
                         cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import time
    for _ in range(600):  # the guest staged its write
        if os.path.exists(os.path.join(sync, "ready")):
            break
        time.sleep(0.05)
    with open(os.path.join(work, "f"), "a") as f:
        f.write("outside\n")
    open(os.path.join(sync, "go"), "w").close()
    out, err = p.communicate(timeout=60)
    shutil.rmtree(sync, ignore_errors=True)
    assert p.returncode == 125, err
    assert "not committed (changed meanwhile): M f" in err
    assert open(os.path.join(work, "f")).read() == "real\noutside\n"
    kept = [l.split(" in ", 1)[1] for l in err.splitlines() if "kept in" in l]
    assert kept and os.path.isdir(kept[0])
    shutil.rmtree(os.path.dirname(kept[0]), ignore_errors=True)


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_git_clone_of_a_repository_in_the_workdir(work):
    """git with a repository inside the workdir: a clone (--no-hardlinks: a
    link here is a new inode, which git's local clone refuses, see
    docs/cow-chroot.md), a commit, a push back; committed, all is real."""
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    ident = ["-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    os.makedirs(os.path.join(work, "seed"))
    with open(os.path.join(work, "seed", "a.txt"), "w") as f:
        f.write("a\n")
    for cmd in (["init", "-q", "-b", "main", "seed"], ["-C", "seed", "add", "."],
                ["-C", "seed", *ident, "commit", "-qm", "first"],
                ["clone", "-q", "--bare", "seed", "remote.git"]):
        subprocess.run(["git", *cmd], cwd=work, env=env, check=True, capture_output=True)
    script = ("git clone -q --no-hardlinks remote.git clone && cd clone && echo b > b.txt && "
              "git add b.txt && git %s commit -qm second && git push -q origin HEAD && "
              "git log --oneline | wc -l" % " ".join(ident))
    r = box(work, env={"GIT_CONFIG_GLOBAL": "/dev/null"}).run(["sh", "-c", script])
    assert r.success and r.stdout.strip() == b"2", r.stderr
    assert open(os.path.join(work, "clone", "b.txt")).read() == "b\n"
    log = subprocess.run(["git", "-C", "remote.git", "log", "--oneline"], cwd=work, env=env,
                         capture_output=True, text=True).stdout
    assert len(log.splitlines()) == 2  # the push reached the real remote at commit


RELATIVE_PROBE = r"""
import errno, os, socket, threading
def worker():
    with open("sub/fromthread", "w") as f:
        f.write("t\n")
th = threading.Thread(target=worker)
th.start()
th.join()
d = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
os.close(os.open("viadirfd", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=d))
print("listing", sorted(os.listdir("sub")))
f = os.open("sub/a", os.O_RDONLY)
s = socket.socket()
for fd, name in ((f, "file"), (9999, "badfd"), (s.fileno(), "socket")):
    try:
        os.open("x", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        print(name, "opened")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
os.unlink("sub/a")
print("after unlink", os.path.exists("sub/a"), sorted(os.listdir("sub")))
"""


def test_relative_paths_from_a_thread_a_dirfd_and_odd_fds_see_what_bare_sees(work):
    """The start of a relative path is read from the caller's /proc link
    (its cwd, or the fd it passed: callpath.c caller_dir): a worker
    thread's cwd, a directory fd, a file, a closed number and a socket
    as the start give the guest what they give a bare run, and the writes
    land in the layer, not the real tree."""
    os.makedirs(os.path.join(work, "sub"))
    with open(os.path.join(work, "sub", "a"), "w") as f:
        f.write("real\n")
    bare_dir = tempfile.mkdtemp(prefix="sandlock-cow-bare-", dir="/tmp")
    try:
        shutil.copytree(work, bare_dir, dirs_exist_ok=True)
        bare = subprocess.run([PY, "-c", RELATIVE_PROBE], cwd=bare_dir, capture_output=True)
    finally:
        shutil.rmtree(bare_dir)
    assert bare.returncode == 0, bare.stderr
    assert b"listing ['a', 'fromthread', 'viadirfd']" in bare.stdout
    before = digest(work)
    r = box(work, on_exit=sandlock.BranchAction.ABORT).run([PY, "-c", RELATIVE_PROBE])
    assert r.success, r.stderr
    assert r.stdout == bare.stdout
    assert digest(work) == before
