"""Exec of a path the kernel cannot find (execpath.c), for bench/run.py:
us per fork + exec + wait of a tiny program, run N times by a dash loop,
in one invocation:

  bare      no sandbox, a copy of /bin/true in a directory
  plain     sandboxed (no workdir): the kernel execs it, nothing trapped
  cow_real  COW workdir, the real (untouched) copy: trapped, passed on
  cow_staged COW workdir, a copy staged in the run: trapped, the path
            rewritten to the file in the upper layer
  chroot    a busybox rootfs, `/bin/true` by path: resolved in the view,
            rewritten to the host path (skipped without busybox-static)
  *_spawn   the same programs started by Python's subprocess (vfork): a
            staged one also holds the caller and its parent stopped until
            the parent's memory is restored
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
N = int(os.environ.get("BENCH_EXEC_N", "200"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
BUSYBOX = "/bin/busybox"

# The loop times itself (date +%s%N around it), so a run's start and the
# staging copy are not counted.
LOOP = ('cp t s; a=$(date +%%s%%N); i=0; while [ $i -lt %d ]; do "$0"; i=$((i+1)); done; '
        'b=$(date +%%s%%N); echo $(((b-a)/%d))' % (N, N))
SPAWN_LOOP = ('import shutil, subprocess, sys, time\n'
              'shutil.copy("t", "s")\n'
              'n = %d\n'
              't0 = time.perf_counter_ns()\n'
              'for _ in range(n): subprocess.run([sys.argv[1]])\n'
              'print((time.perf_counter_ns() - t0) / n)\n' % (N // 2))

# busybox date has no %N: the chroot loop is timed from outside, minus an
# empty loop's run.
CHROOT_LOOP = 'i=0; while [ $i -lt $0 ]; do /bin/true; i=$((i+1)); done'



def timed(sb, n):
    t0 = time.perf_counter()
    r = sb.run(["sh", "-c", CHROOT_LOOP, str(n)])
    assert r.success, r.stderr
    return time.perf_counter() - t0


def figures():
    sys.path.insert(0, str(REPO / "python"))
    import sandlock

    top = tempfile.mkdtemp(prefix="sandlock-bench-exec-", dir="/tmp")
    try:
        work = os.path.join(top, "work")
        os.mkdir(work)
        shutil.copy("/bin/true", os.path.join(work, "t"))
        plain = sandlock.Sandbox(fs_readable=SYS_RO, fs_writable=[work], cwd=work)
        cow = sandlock.Sandbox(fs_readable=SYS_RO, workdir=work, cwd=work, on_exit="abort")
        boxes = {"bare": None, "plain": plain, "cow_real": cow, "cow_staged": cow}
        chroot = None
        if os.access(BUSYBOX, os.X_OK):
            root = os.path.join(top, "root")
            os.makedirs(os.path.join(root, "bin"))
            shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
            for a in ("sh", "true", "date"):
                os.symlink("/bin/busybox", os.path.join(root, "bin", a))
            chroot = sandlock.Sandbox(chroot=root)
        runs = {k: [] for k in list(boxes) + (["chroot"] if chroot else [])}
        def loop_us(sb, argv):
            """The loop's own figure (us per exec); bare runs in work."""
            if sb is None:
                out = subprocess.run(argv, cwd=work, capture_output=True, text=True,
                                     check=True).stdout
                os.unlink(os.path.join(work, "s"))
            else:
                r = sb.run(argv)
                assert r.success, r.stderr
                out = r.stdout.decode()
            return float(out) / 1e3

        spawns = {"bare_spawn": None, "cow_real_spawn": cow, "cow_staged_spawn": cow}
        for _ in range(REPS):  # interleaved: every variant sees the same load
            for what, sb in boxes.items():
                prog = "./s" if what == "cow_staged" else "./t"
                runs[what].append(loop_us(sb, ["/bin/sh", "-c", LOOP, prog]))
            for what, sb in spawns.items():
                prog = "./s" if what == "cow_staged_spawn" else "./t"
                argv = ["/usr/bin/python3", "-c", SPAWN_LOOP, prog]
                runs.setdefault(what, []).append(loop_us(sb, argv))
            if chroot:
                runs["chroot"].append((timed(chroot, N) - timed(chroot, 0)) / N * 1e6)
        return {"exec_%s_us" % k: statistics.median(v) for k, v in runs.items()}
    finally:
        shutil.rmtree(top, ignore_errors=True)


LABELS = (("bare", "bare, no sandbox"),
          ("plain", "sandboxed, no workdir (not trapped)"),
          ("cow_real", "COW workdir, real program (passed on)"),
          ("cow_staged", "COW workdir, staged program (rewritten)"),
          ("chroot", "chroot, /bin/true by path (rewritten)"),
          ("bare_spawn", "subprocess.run (vfork), bare"),
          ("cow_real_spawn", "subprocess.run, COW real program"),
          ("cow_staged_spawn", "subprocess.run, COW staged (stop + restore)"))


def report(fig, row):
    """Print the section with bench/run.py's row(); nothing if not measured."""
    if "exec_bare_us" not in fig:
        return
    print(f"exec of a program by path: fork + exec + wait in a sh loop of {N}")
    bare = ("vs bare", fig["exec_bare_us"])
    plain = ("vs sandboxed", fig["exec_plain_us"])
    for what, label in LABELS:
        key = "exec_%s_us" % what
        if key in fig:
            if what.endswith("_spawn"):
                bases = () if what == "bare_spawn" else (("vs bare", fig["exec_bare_spawn_us"]),)
            else:
                bases = () if what == "bare" else (bare,) if what == "plain" else (plain, bare)
            print(row(label, fig[key], "us", *bases))
