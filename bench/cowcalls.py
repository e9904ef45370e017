"""Per-call cost of the COW workdir (issue 20), for bench/run.py.

The calls a C build makes most (make -j2 of tests/workloads' C project:
~39k readlink, ~16k openat, ~14k newfstatat of ~73k trapped), each run N
times by build/bench/loop_path inside a workdir where something is staged
(so every call is looked at), in three modes:

  bare   no sandbox
  floor  the plain sandbox with the COW trap set answered CONTINUE by a
         do-nothing C handler (build/bench/cowfloor): interception alone
  cow    `sandlock run --workdir` (aborted)

Two figures per call and mode: wall ns per call (timed inside the loop),
and CPU ns per call: user + system time of every process of the run, the
supervisor included, of a run of N calls minus a run of one call, over the
calls between.  The CPU figure is the one to read on a loaded host, where a
wall figure measures the other tenants.
"""
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
N = int(os.environ.get("BENCH_COWCALLS_N", "20000"))
REPS = int(os.environ.get("BENCH_REPS", "5"))

# (label, call, path): outside the workdir by absolute path, inside it by
# a relative one (a real file; a staged one).
CALLS = (
    ("readlink_out", "readlink", "/usr/lib"),
    ("stat_out", "stat", "/usr/include/stdio.h"),
    ("stat_in", "stat", "src/file.c"),
    ("open_in", "open", "src/file.c"),
    ("stat_staged", "stat", "obj/staged.o"),
)
MODES = ("bare", "floor", "cow")


def argv_for(mode, work, tmp, call, n, path):
    loop = [str(BUILD / "bench" / "loop_path"), call, str(n), path]
    if mode == "bare":
        return loop
    # Something staged first: an untouched layer lets every read pass unread.
    staged = ["/bin/sh", "-c", 'mkdir -p obj && : > obj/staged.o && exec "$@"', "sh"] + loop
    if mode == "floor":
        return [str(BUILD / "bench" / "cowfloor"), "-r", str(BUILD / "bench"), work, tmp,
                "--"] + staged
    argv = [str(BUILD / "sandlock"), "run", "-r", str(BUILD / "bench"), "-w", tmp,
            "-w", "/dev/null", "-C", work, "--workdir", work, "--on-exit", "abort"]
    for d in SYS_RO:
        argv += ["-r", d]
    return argv + ["--"] + staged


def one_run(argv, work):
    """(wall ns per call printed by the loop, CPU seconds of the run)."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, cwd=work, capture_output=True, text=True)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (argv, r.stderr[-1000:]))
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return float(r.stdout), cpu


def figures():
    top = tempfile.mkdtemp(prefix="sandlock-bench-cowcalls-", dir="/tmp")
    try:
        work, tmp = os.path.join(top, "work"), os.path.join(top, "tmp")
        os.makedirs(os.path.join(work, "src"))
        os.mkdir(tmp)
        with open(os.path.join(work, "src", "file.c"), "w") as f:
            f.write("int x;\n")
        open(os.path.join(work, "obj_staged_bare"), "w").close()
        calls_of = lambda n: n + n // 10 + 1  # loop_path's warm-up included
        runs = {}
        for _ in range(REPS):  # interleaved: every variant sees the same load
            for label, call, path in CALLS:
                for mode in MODES:
                    p = path
                    if mode == "bare" and label == "stat_staged":
                        p = "obj_staged_bare"  # bare has no layer: a real file
                    wall, cpu = one_run(argv_for(mode, work, tmp, call, N, p), work)
                    _, cpu1 = one_run(argv_for(mode, work, tmp, call, 1, p), work)
                    key = "cowcalls_%s_%s" % (label, mode)
                    runs.setdefault(key + "_ns", []).append(wall)
                    runs.setdefault(key + "_cpu_ns", []).append(
                        (cpu - cpu1) * 1e9 / (calls_of(N) - calls_of(1)))
        return {k: statistics.median(v) for k, v in runs.items()}
    finally:
        shutil.rmtree(top, ignore_errors=True)


def report(fig, row):
    if "cowcalls_readlink_out_bare_ns" not in fig:
        return
    print("COW workdir, per call (loop of %d, something staged): bare vs cowfloor (COW traps "
          "answered CONTINUE) vs --workdir; wall, then CPU of the whole run per call" % N)
    labels = {"readlink_out": "readlink /usr/lib (outside)",
              "stat_out": "stat /usr/include/stdio.h (outside)",
              "stat_in": "stat src/file.c (real, in workdir)",
              "open_in": "open src/file.c (real, in workdir)",
              "stat_staged": "stat obj/staged.o (staged)"}
    for label, _, _ in CALLS:
        for kind, suffix in (("", "_ns"), (" CPU", "_cpu_ns")):
            key = "cowcalls_%s_%%s%s" % (label, suffix)
            bare = ("vs bare", fig[key % "bare"])
            print(row(labels[label] + kind, fig[key % "bare"], "ns"))
            print(row("  cowfloor" + kind, fig[key % "floor"], "ns", bare))
            print(row("  COW --workdir" + kind, fig[key % "cow"], "ns", bare,
                      ("vs cowfloor", fig[key % "floor"])))


if __name__ == "__main__":
    def _row(label, value, unit, *bases):
        ratios = "  ".join(f"{value / b:6.2f}x {n}" for n, b in bases if b)
        return f"  {label:<40} {value:10.1f} {unit:<3} {ratios}"
    report(figures(), _row)
