#!/usr/bin/python3
"""Differential fuzzer of the copy-on-write workdir (tests/python/test_cow_fuzz.py
runs a fixed corpus of it; as a tool it explores new seeds).

Usage: /usr/bin/python3 tests/python/cowfuzz.py --seeds N --start S [--jobs J] [-v]
           [--no-hardlinks] [--safe-modes] [--user nobody]
       /usr/bin/python3 tests/python/cowfuzz.py --show SEED | --shrink SEED [--want CATEGORY]

For each seed: build a random initial tree at a fixed path W, run a random sh
script bare in W, restore W, run the same script under
`sandlock run ... --workdir W --cwd W` (commit), restore W again and run it with
`--dry-run --json`.  Compares stdout (with per-command exit statuses), exit
status, the final trees (type, content, mode, symlink target, hard-link
groups; W's own mode as "."), that --dry-run leaves W untouched, and that the
dry-run change list matches the real difference between the initial tree and
the bare result.  Failing seeds are written to $COWFUZZ_DIR/fail/<seed>.txt
(default $TMPDIR/sandlock-cowfuzz-UID), tagged with the class they look like
(heuristic; UNCLASSIFIED = look at it).  The bare side runs without
capabilities (setpriv) because the sandbox drops them all; --user runs both
sides as that user.  The CLI is $SANDLOCK_BUILD/sandlock (default build/).
"""
import argparse, json, os, random, shutil, stat, subprocess, sys, time
from concurrent.futures import ProcessPoolExecutor

import tempfile as _tempfile

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANDLOCK = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(_REPO, "build")), "sandlock")
_DIR = os.environ.get("COWFUZZ_DIR", os.path.join(_tempfile.gettempdir(),
                                                  "sandlock-cowfuzz-%d" % os.getuid()))
BASE = os.path.join(_DIR, "run")
FAILDIR = os.path.join(_DIR, "fail")
RO = ["-r", "/usr", "-r", "/lib", "-r", "/lib64", "-r", "/bin", "-r", "/etc"]
# the sandbox holds no capabilities: run the bare side without them too
BARE = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"] if os.geteuid() == 0 else []
SAFE_MODES = os.environ.get("FUZZ_SAFE_MODES") is not None  # owner keeps rwx: no permission denials
USER = os.environ.get("FUZZ_USER")  # run both sides as this user (tree chowned to it)
HARDLINKS = os.environ.get("FUZZ_NO_HARDLINKS") is None  # --no-hardlinks sets it
MODES = [0o644, 0o755, 0o600]
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]


# ---------------------------------------------------------------- tree
def gen_tree(rng):
    """Return list of ('dir'|'file'|'sym'|'hard', rel, extra) in creation order."""
    ents = []
    dirs = [""]
    files = []
    ndirs = rng.randint(1, 4)
    for i in range(ndirs):
        parent = rng.choice(dirs)
        d = os.path.join(parent, "d%d" % i)
        ents.append(("dir", d, rng.choice([0o755, 0o755, 0o700])))
        dirs.append(d)
    if rng.random() < 0.5:
        d = os.path.join(rng.choice(dirs), "empty")
        if d not in dirs:
            ents.append(("dir", d, 0o755)); dirs.append(d)
    for i in range(rng.randint(2, 7)):
        f = os.path.join(rng.choice(dirs), "f%d" % i)
        content = "".join(rng.choice(WORDS) + "\n" for _ in range(rng.randint(0, 3)))
        ents.append(("file", f, (content, rng.choice(MODES))))
        files.append(f)
    for i in range(rng.randint(1, 3)):
        where = rng.choice(dirs)
        tgt = rng.choice(files + dirs[1:] + ["nowhere"])
        kind = rng.choice(["rel", "rel", "abs"])
        ents.append(("sym", os.path.join(where, "l%d" % i), (tgt, kind)))
    for i in range(rng.choice([0, 0, 1, 2]) if HARDLINKS else 0):
        src = rng.choice(files)
        ents.append(("hard", os.path.join(rng.choice(dirs), "h%d" % i), src))
    return ents


def build_tree(W, ents):
    os.makedirs(W)
    for kind, rel, x in ents:
        p = os.path.join(W, rel)
        if kind == "dir":
            os.mkdir(p)
        elif kind == "file":
            with open(p, "w") as f:
                f.write(x[0])
            os.chmod(p, x[1])
        elif kind == "sym":
            tgt, k = x
            if k == "abs":
                t = os.path.join(W, tgt)
            else:
                t = os.path.relpath(os.path.join(W, tgt), os.path.dirname(p))
            os.symlink(t, p)
    for kind, rel, x in ents:
        if kind == "hard":
            os.link(os.path.join(W, x), os.path.join(W, rel))
    for kind, rel, x in ents:  # dir modes last
        if kind == "dir":
            os.chmod(os.path.join(W, rel), x)


def tree_shell(W, ents):
    """Shell snippet recreating the tree (for reproducers)."""
    out = ['D=%s; rm -rf "$D"; mkdir -p "$D"; cd "$D"' % W]
    for kind, rel, x in ents:
        if kind == "dir":
            out.append("mkdir %s" % rel)
        elif kind == "file":
            out.append("printf %s > %s; chmod %o %s" % (sh_q(x[0]), rel, x[1], rel))
        elif kind == "sym":
            tgt, k = x
            p = os.path.join(W, rel)
            t = os.path.join(W, tgt) if k == "abs" else os.path.relpath(os.path.join(W, tgt), os.path.dirname(p))
            out.append("ln -s %s %s" % (t, rel))
    for kind, rel, x in ents:
        if kind == "hard":
            out.append("ln %s %s" % (x, rel))
    for kind, rel, x in ents:
        if kind == "dir" and x != 0o755:
            out.append("chmod %o %s" % (x, rel))
    return "\n".join(out)


def sh_q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def snapshot(W):
    """Map rel -> description (W itself as "."); plus hard-link groups."""
    snap = {".": ("dir", oct(stat.S_IMODE(os.lstat(W).st_mode)))}
    inodes = {}
    for root, dirs, files in os.walk(W):
        for n in sorted(dirs + files):
            p = os.path.join(root, n)
            rel = os.path.relpath(p, W)
            st = os.lstat(p)
            m = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                snap[rel] = ("sym", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                snap[rel] = ("dir", oct(m))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    snap[rel] = ("file", oct(m), f.read(), st.st_nlink)
                inodes.setdefault(st.st_ino, []).append(rel)
            else:
                snap[rel] = ("other", st.st_mode)
    groups = sorted(sorted(g) for g in inodes.values() if len(g) > 1)
    return snap, groups


def expected_changes(a, b):
    ch = set()
    for k in a:
        if k not in b:
            ch.add(("D", k))
    for k in b:
        if k not in a:
            ch.add(("A", k))
        else:
            x, y = a[k], b[k]
            if x[0] == "file" and y[0] == "file":
                x, y = x[:3], y[:3]  # nlink not a change
            if x != y:
                ch.add(("M", k))
    return ch


# ---------------------------------------------------------------- script
class Gen:
    def __init__(self, rng, W, ents):
        self.rng = rng
        self.W = W
        self.cwd = ""
        self.dirs = [""] + [e[1] for e in ents if e[0] == "dir"]
        self.files = [e[1] for e in ents if e[0] in ("file", "hard")]
        self.syms = [e[1] for e in ents if e[0] == "sym"]
        self.newn = 0
        self.script_done = False

    def p(self, rel):
        """rel (relative to W) -> string relative to cwd or absolute."""
        r = self.rng.random()
        s = os.path.relpath(os.path.join(self.W, rel), os.path.join(self.W, self.cwd))
        if r < 0.15 or s.startswith(".."):
            # never a relative path with "..": if a cd failed the tracked cwd is
            # wrong and the script must not climb out of W
            return os.path.join(self.W, rel) if rel else self.W
        return s

    def fresh(self, prefix="n"):
        self.newn += 1
        return os.path.join(self.rng.choice(self.dirs + [self.cwd] * 2), "%s%d" % (prefix, self.newn))

    def any_path(self):
        rng = self.rng
        pool = self.files * 3 + self.dirs[1:] * 2 + self.syms * 2
        # paths through symlinks
        for s in self.syms:
            pool.append(os.path.join(s, rng.choice(["f0", "f1", "f2", "x", "d1"])))
        if not pool or rng.random() < 0.1:
            return self.fresh()
        return rng.choice(pool)

    def file_path(self):
        rng = self.rng
        r = rng.random()
        if r < 0.5 and self.files:
            return rng.choice(self.files)
        if r < 0.65 and self.syms:
            return rng.choice(self.syms)
        if r < 0.75 and self.syms:
            return os.path.join(rng.choice(self.syms), "f%d" % rng.randint(0, 6))
        return self.fresh()

    def dir_path(self):
        if self.rng.random() < 0.15 and self.syms:
            return self.rng.choice(self.syms)
        return self.rng.choice(self.dirs)

    def op(self):
        rng = self.rng
        q = self.p
        k = rng.randint(0, 27)
        txt = rng.choice(WORDS)
        if k <= 2:
            f = self.file_path(); self.files.append(f)
            return "echo %s > %s" % (txt, q(f))
        if k <= 4:
            f = self.file_path(); self.files.append(f)
            return "echo %s >> %s" % (txt, q(f))
        if k == 5:
            return "cat %s" % q(self.file_path())
        if k == 6:
            return "rm %s" % q(self.file_path())
        if k == 7:
            return "rm -r %s" % q(self.any_path())
        if k == 8:
            d = self.fresh("nd")
            if rng.random() < 0.5:
                d = os.path.join(d, "sub")
            self.dirs.append(d)
            return "mkdir -p %s" % q(d)
        if k == 9:
            c = [d for d in self.dirs if d]
            return "rmdir %s" % q(rng.choice(c) if c else self.fresh())
        if k == 10:  # mv file
            src = self.file_path()
            r = rng.random()
            if r < 0.4:
                dst = self.fresh(); self.files.append(dst)
            elif r < 0.8:
                dst = self.file_path()
            else:
                dst = self.dir_path()
            return "mv %s %s" % (q(src), q(dst))
        if k == 11:  # mv dir
            c = [d for d in self.dirs if d] or [""]
            src = rng.choice(c)
            r = rng.random()
            if r < 0.5:
                dst = self.fresh("md"); self.dirs.append(dst)
            else:
                dst = rng.choice(self.dirs)
            if not src:
                src = self.fresh()
            return "mv %s %s" % (q(src), q(dst))
        if k == 12:
            src = self.file_path()
            dst = self.fresh() if rng.random() < 0.6 else self.file_path()
            self.files.append(dst)
            return "cp %s %s" % (q(src), q(dst))
        if k == 13:
            src = self.dir_path()
            dst = self.fresh("cd") if rng.random() < 0.7 else self.dir_path()
            if src == "" or (dst + "/").startswith(src + "/"):
                src = self.fresh("nx")  # would copy into itself: readdir-order dependent
            self.dirs.append(dst)
            return "cp -r %s %s" % (q(src or "."), q(dst))
        if k == 14:
            src = self.file_path()
            dst = self.fresh() if rng.random() < 0.8 else self.file_path()
            self.files.append(dst)
            return "ln %s %s" % (q(src), q(dst))
        if k == 15:
            tgt = self.any_path()
            dst = self.fresh("s")
            self.syms.append(dst)
            if rng.random() < 0.3:
                t = os.path.join(self.W, tgt)
            else:
                t = os.path.relpath(os.path.join(self.W, tgt), os.path.join(self.W, os.path.dirname(dst)))
            return "ln -s %s %s" % (t, q(dst))
        if k == 16:
            modes = ["755", "700", "+x", "go-r", "u+rw"] if SAFE_MODES else ["644", "755", "600", "700", "+x", "go-r"]
            if USER and not SAFE_MODES:
                modes += ["000", "400", "500"]  # as root these would only show "perm-not-enforced"
            return "chmod %s %s" % (rng.choice(modes), q(self.any_path()))
        if k == 17:
            f = self.file_path(); self.files.append(f)
            return "touch %s" % q(f)
        if k == 18:
            f = self.file_path(); self.files.append(f)
            return "truncate -s %d %s" % (rng.choice([0, 3, 10, 100]), q(f))
        if k in (19, 20):
            if rng.random() < 0.25:
                self.cwd = ""
                return 'cd %s' % self.W
            if rng.random() < 0.2 and self.cwd:
                self.cwd = os.path.dirname(self.cwd)
                return "cd %s" % os.path.join(self.W, self.cwd)
            d = self.dir_path()
            s = q(d) if d else self.W
            self.cwd = d
            return "cd %s" % s
        if k == 21:
            d = self.dir_path()
            return "{ ls -a %s; echo ls=$?; } | sort" % (q(d) if d else ".")
        if k == 22:
            return "find . | sort"
        if k == 23:
            d = self.dir_path()
            return "find %s | sort" % (q(d) if d else ".")
        if k == 24:
            n = "sc%d" % rng.randint(0, 2)
            self.files.append(os.path.join(self.cwd, n))
            return "printf '#!/bin/sh\\necho hi $1\\n' > %s; chmod +x %s; ./%s x" % (n, n, n)
        if k == 25:
            return "stat -c '%%n %%F %%a %%s %%h' %s" % q(self.any_path())
        if k == 26:
            return "readlink %s" % q(self.any_path())
        if k == 27:
            return "cat %s" % q(self.any_path())


def gen_script(rng, W, ents):
    g = Gen(rng, W, ents)
    ops = [g.op() for _ in range(rng.randint(5, 25))]
    fail_exit = rng.random() < 0.08
    return ops, fail_exit


def render(ops, fail_exit):
    lines = []
    for i, o in enumerate(ops):
        lines.append("%s; echo \"#%d rc=$?\"" % (o, i))
    lines.append("exit 3" if fail_exit else "exit 0")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- runs
def run(cmd, cwd):
    import re
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
        # a conflicting / failed commit keeps the layer: remove it
        for m in re.findall(r"staged changes kept in (/\S*sandlock-cow-[^/\s]+)", err):
            subprocess.run(["chmod", "-R", "u+rwx", m], capture_output=True)
            shutil.rmtree(m, ignore_errors=True)
        return r.returncode, out, err
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def norm_out(s):
    # directory sizes depend on the filesystem: drop %s for directories
    out = []
    for line in s.splitlines():
        parts = line.split(" ")
        if len(parts) >= 5 and parts[-4] == "directory":
            parts[-2] = "<dsize>"
            line = " ".join(parts)
        out.append(line)
    return "\n".join(out)


def as_user(pre):
    if not USER:
        return pre
    import pwd
    pw = pwd.getpwnam(USER)  # (an unprivileged user has no capabilities to drop: pre unused)
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups",
            "env", "TMPDIR=/tmp", "HOME=/tmp"]


def diff_snap(a, b):
    msgs = []
    for k in sorted(set(a[0]) | set(b[0])):
        x, y = a[0].get(k), b[0].get(k)
        if x != y:
            msgs.append("  %s: bare=%r sandbox=%r" % (k, x, y))
    if a[1] != b[1]:
        msgs.append("  hardlink groups: bare=%r sandbox=%r" % (a[1], b[1]))
    return msgs


def restore(W, P):
    if os.path.lexists(W):
        subprocess.run(["chmod", "-R", "u+rwx", W], capture_output=True)
        shutil.rmtree(W)
    subprocess.run(["cp", "-a", P, W], check=True)


def case(seed, ents=None, ops=None, fail_exit=None, tag=""):
    """Run one case. Returns (list of problem strings, info dict)."""
    rng = random.Random(seed)
    top = os.path.join(BASE, "s%s%s" % (seed, tag))
    # W is nested so that a moved relative symlink climbing out of W still
    # lands inside top (the bare run may write through it)
    W = os.path.join(top, "a", "b", "c", "root")
    P = os.path.join(top, "pristine")
    if os.path.exists(top):
        subprocess.run(["chmod", "-R", "u+rwx", top], capture_output=True)
        shutil.rmtree(top)
    os.makedirs(top)
    if ents is None:
        ents = gen_tree(rng)
    if ops is None:
        ops, fail_exit = gen_script(rng, W, ents)
    script = render(ops, fail_exit)
    os.makedirs(os.path.dirname(W))
    build_tree(W, ents)
    if USER:
        for d in (top, top + "/a", top + "/a/b", top + "/a/b/c"):
            os.chmod(d, 0o755)
        subprocess.run(["chown", "-hR", USER + ":", W], check=True)
    subprocess.run(["cp", "-a", W, P], check=True)
    init = snapshot(W)
    probs = []
    # bare
    rc_a, out_a, err_a = run(as_user(BARE) + ["/bin/sh", "-c", script], W)
    snap_a = snapshot(W)
    # sandbox commit
    restore(W, P)
    rc_b, out_b, err_b = run(as_user([]) + [SANDLOCK, "run"] + RO + ["--workdir", W, "--cwd", W, "--", "/bin/sh", "-c", script], W)
    snap_b = snapshot(W)
    if rc_a != rc_b:
        probs.append("exit status: bare=%r sandbox=%r" % (rc_a, rc_b))
    if norm_out(out_a) != norm_out(out_b):
        import difflib
        d = "\n".join(difflib.unified_diff(norm_out(out_a).splitlines(), norm_out(out_b).splitlines(),
                                           "bare", "sandbox", lineterm="", n=1))
        probs.append("stdout differs:\n" + d)
    exp_final = snap_a if rc_a == 0 else init
    m = diff_snap(exp_final, snap_b)
    if m:
        probs.append("final tree differs (%s):\n" % ("commit" if rc_a == 0 else "abort") + "\n".join(m))
    # dry run
    restore(W, P)
    rc_c, out_c, err_c = run(as_user([]) + [SANDLOCK, "run", "--json"] + RO + ["--workdir", W, "--cwd", W, "--dry-run", "--",
                                                                 "/bin/sh", "-c", script], W)
    snap_c = snapshot(W)
    m = diff_snap(init, snap_c)
    if m:
        probs.append("dry-run changed the tree:\n" + "\n".join(m))
    try:
        j = json.loads(err_c.strip().splitlines()[-1])
        got = set((c["kind"], c["path"]) for c in j.get("changes", []))
        exp = expected_changes(init[0], snap_a[0])
        if got != exp:
            probs.append("dry-run change list: missing=%s extra=%s" % (sorted(exp - got), sorted(got - exp)))
    except Exception as e:
        probs.append("dry-run json unparsable: %r (rc=%r) stderr=%s" % (e, rc_c, err_c[-500:]))
    info = dict(seed=seed, tree=tree_shell(W, ents), script=script, out_a=out_a, out_b=out_b,
                err_a=err_a, err_b=err_b, ents=ents, ops=ops, fail_exit=fail_exit)
    subprocess.run(["chmod", "-R", "u+rwx", top], capture_output=True)
    shutil.rmtree(top)
    return probs, info


def classify(probs, info):
    """Heuristic tags for the known bug classes (see the report), so new ones stand out."""
    import re
    tags = set()
    if not info:
        return ["harness"]
    eb, ea = info["err_b"], info["err_a"]
    text = "\n".join(probs)
    if "changed meanwhile" in eb:
        tags.add("commit-self-conflict")
    if "commit failed" in eb:
        tags.add("commit-failed")
    if re.search(r"cannot overwrite (non-)?directory", eb) and not re.search(r"cannot overwrite (non-)?directory", ea):
        tags.add("O_PATH-EACCES")
    if any(e[0] == "hard" for e in info["ents"]) and ("hardlink groups" in text or "final tree" in text or " rc=" in text):
        tags.add("real-hardlink-split")
    minus = [l[1:] for l in text.splitlines() if l.startswith("   -") or l.startswith("-") and not l.startswith("---")]
    plus = [l[1:] for l in text.splitlines() if l.startswith("+") and not l.startswith("+++")]
    if minus and len(minus) == len(plus) and all(
            " directory " in a and a.rsplit(" ", 1)[0] == b.rsplit(" ", 1)[0] for a, b in zip(minus, plus)):
        tags.add("dir-nlink")
    if "Permission denied" in ea and "Permission denied" not in eb:
        tags.add("perm-not-enforced")
    if "Permission denied" in eb and "Permission denied" not in ea:
        tags.add("write-out-via-staged-symlink(documented)")
    if "Device or resource busy" in eb:
        tags.add("rm-workdir-root")
    if "into itself" in eb:
        tags.add("cp-into-itself(readdir-order noise)")
    if "dry-run change list" in text and "final tree differs" not in text:
        tags.add("DRYRUN-ONLY")
    if "dry-run changed the tree" in text:
        tags.add("DRYRUN-WROTE")
    if "Cannot fork" in eb:
        tags.add("cannot-fork-flake")
    return sorted(tags) or ["UNCLASSIFIED"]


def work(seed):
    t = time.time()
    try:
        probs, info = case(seed)
    except Exception as e:
        import traceback
        return seed, ["harness error: " + traceback.format_exc()], None, time.time() - t
    return seed, probs, info, time.time() - t


def report(seed, probs, info):
    os.makedirs(FAILDIR, exist_ok=True)
    txt = "seed %d\n--- tree\n%s\n--- script\n%s--- problems\n%s\n--- stderr bare\n%s--- stderr sandbox\n%s" % (
        seed, info["tree"] if info else "", info["script"] if info else "", "\n".join(probs),
        info["err_a"] if info else "", info["err_b"] if info else "")
    with open(os.path.join(FAILDIR, "%d.txt" % seed), "w") as f:
        f.write(txt)


def cats(probs):
    return set(p.split(":")[0].split(" (")[0] for p in probs)


def shrink(seed, want=None):
    """Greedy removal of script ops, then tree entries, keeping a problem category."""
    rng = random.Random(seed)
    W = os.path.join(BASE, "s%sx" % seed, "a", "b", "c", "root")
    ents = gen_tree(rng)
    ops, fe = gen_script(rng, W, ents)
    probs, _ = case(seed, ents, ops, fe, tag="x")
    c0 = cats(probs)
    if not c0:
        print("seed %d does not fail" % seed); return
    want = want or sorted(c0)[0]

    def bad(e, o):
        try:
            p, _ = case(seed, e, o, fe, tag="x")
        except Exception:
            return False
        return want in cats(p)
    changed = True
    while changed:
        changed = False
        for i in range(len(ops) - 1, -1, -1):
            o2 = ops[:i] + ops[i + 1:]
            if bad(ents, o2):
                ops = o2; changed = True
        for i in range(len(ents) - 1, -1, -1):
            e2 = ents[:i] + ents[i + 1:]
            if bad(e2, ops):
                ents = e2; changed = True
    probs, info = case(seed, ents, ops, fe, tag="x")
    print(info["tree"]); print("--- script"); print(info["script"])
    print("--- problems"); print("\n".join(probs))
    print("--- stdout bare"); print(info["out_a"]); print("--- stdout sandbox"); print(info["out_b"])
    print("--- stderr sandbox"); print(info["err_b"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--show", type=int)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--shrink", type=int)
    ap.add_argument("--want")
    ap.add_argument("--no-hardlinks", action="store_true",
                    help="no hard links in the initial tree (they hit one known bug often)")
    ap.add_argument("--safe-modes", action="store_true", help="chmod never takes the owner's rw(x) away")
    ap.add_argument("--user", help="run bare and sandboxed sides as this user (e.g. nobody)")
    a = ap.parse_args()
    if a.safe_modes:
        os.environ["FUZZ_SAFE_MODES"] = "1"
        global SAFE_MODES
        SAFE_MODES = True
    if a.user:
        os.environ["FUZZ_USER"] = a.user
        global USER
        USER = a.user
    if a.no_hardlinks:
        os.environ["FUZZ_NO_HARDLINKS"] = "1"
        global HARDLINKS
        HARDLINKS = False
    if a.shrink is not None:
        shrink(a.shrink, a.want); return
    if a.show is not None:
        rng = random.Random(a.show)
        W = os.path.join(BASE, "s%d" % a.show, "a", "b", "c", "root")
        ents = gen_tree(rng)
        ops, fe = gen_script(rng, W, ents)
        print(tree_shell(W, ents)); print("---"); print(render(ops, fe))
        return
    nfail = 0
    tally = {}
    t0 = time.time()
    with ProcessPoolExecutor(a.jobs) as ex:
        for seed, probs, info, dt in ex.map(work, range(a.start, a.start + a.seeds)):
            if probs:
                nfail += 1
                report(seed, probs, info)
                tags = classify(probs, info)
                for t in tags:
                    tally[t] = tally.get(t, 0) + 1
                print("seed %d: FAIL (%.1fs) [%s]" % (seed, dt, " ".join(tags)))
                if a.v or tags == ["UNCLASSIFIED"]:
                    for p in probs:
                        print("   " + p.replace("\n", "\n   "))
            elif a.v:
                print("seed %d: ok (%.1fs)" % (seed, dt))
            sys.stdout.flush()
    print("%d/%d seeds failed, %.0fs; tags: %s" % (nfail, a.seeds, time.time() - t0, tally))
    sys.exit(1 if nfail else 0)


if __name__ == "__main__":
    main()
