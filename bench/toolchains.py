"""Real toolchains, bare vs sandboxed vs in a COW workdir (`make bench`).

Three workloads of tests/workloads/projects.py, each timed as a whole run
of the real tool in a fresh copy of its project:
  build   make -j2 of a C project of projects.C_MODULES units + the link
  pip     pip install --no-index --no-build-isolation --target of a local
          setuptools package (pip builds the wheel, then installs it)
  pytest  pytest of a small project (300+ tests, __pycache__ and
          .pytest_cache written)
  git     a file:// clone of a bare repository of the C project, a commit,
          a push back and a gc of the clone (projects.GIT_SCRIPT)
Modes: bare; `sandlock run` with the project granted -w (plain); the
plain sandbox with every syscall `--workdir` traps answered CONTINUE by a
C handler that does nothing else (floor: build/bench/cowfloor, the cost of
per-call interception alone, which a COW run cannot beat); `sandlock
run --workdir PROJECT` (COW, the changes committed: the commit is part of
the time); for the build also plain with `-P 0` (plain_nofork: process
creation not trapped, so plain - plain_nofork is what max_processes' trapped
forks cost: docs/performance.md).  A scratch TMPDIR and /dev/null are granted -w in both sandboxed modes.  The
modes are interleaved, so each sees the same load; medians of REPS of the
wall time and of the CPU time (user + system of every process of the run,
the supervisor included: less sensitive than wall time to a loaded host).
"""
import resource
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "workloads"))
import projects  # noqa: E402

BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
REPS = int(os.environ.get("BENCH_TOOLCHAIN_REPS", os.environ.get("BENCH_REPS", "5")))
PY = "/usr/bin/python3"

WORKLOADS = {
    "build": (projects.c_project, ["make", "-j2", "-s"]),
    "pip": (projects.py_package,
            [PY, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
             "--no-deps", "--no-cache-dir", "--target", "site", "."]),
    "pytest": (projects.pytest_project, [PY, "-m", "pytest", "-q"]),
    "git": (projects.git_project, ["sh", "-c", projects.GIT_SCRIPT]),
}
MODES = ("bare", "plain", "floor", "cow")
# The build's forks are its only trapped calls in plain mode: a run without
# that trap shows their share (docs/performance.md).
EXTRA_MODES = {"build": ("plain_nofork",)}


def sandbox_argv(mode, proj, tmp):
    if mode == "floor":  # the same sandbox as plain, on the C ABI (cowfloor.c)
        return [str(BUILD / "bench" / "cowfloor"), proj, tmp, "--"]
    argv = [str(BUILD / "sandlock"), "run"]
    for d in SYS_RO:
        argv += ["-r", d]
    # /dev/null: pytest opens it; a default /dev is being added (issue 20).
    argv += ["-w", tmp, "-w", "/dev/null", "-C", proj]
    argv += ["--workdir", proj] if mode == "cow" else ["-w", proj]
    if mode == "plain_nofork":
        argv += ["-P", "0"]
    return argv + ["--"]


def cpu_seconds():
    """User + system time of every reaped child so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(name, mode, template, top):
    """(wall, cpu) seconds for one run of workload `name` in `mode` on a
    fresh copy."""
    proj = tempfile.mkdtemp(prefix=name + "-", dir=top)
    shutil.rmtree(proj)
    shutil.copytree(template, proj, symlinks=True)
    tmp = tempfile.mkdtemp(prefix="tmp-", dir=top)
    cmd = WORKLOADS[name][1]
    argv = cmd if mode == "bare" else sandbox_argv(mode, proj, tmp) + cmd
    env = dict(os.environ, TMPDIR=tmp, PYTHONDONTWRITEBYTECODE="",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONDONTWRITEBYTECODE")
    c0, t0 = cpu_seconds(), time.perf_counter()
    r = subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True)
    secs, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    if r.returncode != 0:
        raise RuntimeError("%s %s failed (%d): %s" % (name, mode, r.returncode,
                                                       r.stderr[-2000:] or r.stdout[-2000:]))
    shutil.rmtree(proj)
    shutil.rmtree(tmp)
    return secs, cpu


def figures(names=None):
    """{toolchain_NAME_MODE_ms, toolchain_NAME_MODE_cpu_ms: median, and
    toolchain_NAME_MODE_paired}; interleaved mode by mode."""
    top = tempfile.mkdtemp(prefix="sandlock-bench-tc-", dir="/tmp")
    try:
        out = {}
        for name in names or WORKLOADS:
            template = WORKLOADS[name][0](os.path.join(top, "template-" + name))
            modes = MODES + EXTRA_MODES.get(name, ())
            runs = {m: [] for m in modes}
            cpu = {m: [] for m in modes}
            for m in modes:  # warm-up: page cache, pyc of the tools
                run_once(name, m, template, top)
            for _ in range(REPS):
                for m in modes:
                    secs, cpu_secs = run_once(name, m, template, top)
                    runs[m].append(secs * 1e3)
                    cpu[m].append(cpu_secs * 1e3)
            for m in modes:
                out["toolchain_%s_%s_ms" % (name, m)] = statistics.median(runs[m])
                out["toolchain_%s_%s_cpu_ms" % (name, m)] = statistics.median(cpu[m])
                # Each run against the bare run of its own round: the
                # median of these shrugs off a load change between rounds.
                out["toolchain_%s_%s_paired" % (name, m)] = statistics.median(
                    r / b for r, b in zip(runs[m], runs["bare"]))
        return out
    finally:
        shutil.rmtree(top, ignore_errors=True)


def report(fig, row):
    if not any("toolchain_%s_bare_ms" % n in fig for n in WORKLOADS):
        return
    print("toolchains, whole run (tests/workloads/projects.py): bare vs `sandlock run -w "
          "PROJECT` vs the COW trap set answered CONTINUE (cowfloor) vs `--workdir PROJECT` "
          "(committed); wall, then CPU time")
    labels = {"build": "make -j2, %d C files + link" % projects.C_MODULES,
              "pip": "pip install --no-index of a local package",
              "pytest": "pytest of a small project",
              "git": "git clone (file://) + commit + push + gc"}
    for name in WORKLOADS:
        key = "toolchain_%s_%%s_ms" % name
        if key % "bare" not in fig:
            continue
        bare = ("vs bare", fig[key % "bare"])
        print(row(labels[name] + ", bare", fig[key % "bare"], "ms"))
        for mode, label in (("plain", "  sandboxed, -w PROJECT"),
                            ("plain_nofork", "  sandboxed -P 0 (forks not trapped)"),
                            ("floor", "  cowfloor: COW traps, CONTINUE"),
                            ("cow", "  COW --workdir PROJECT")):
            if key % mode in fig:
                paired = fig.get("toolchain_%s_%s_paired" % (name, mode))
                print(row(label, fig[key % mode], "ms", bare) +
                      ("  (%.3fx paired)" % paired if paired else ""))
        cpu = "toolchain_%s_%%s_cpu_ms" % name
        bare, floor = ("vs bare", fig[cpu % "bare"]), ("vs cowfloor", fig[cpu % "floor"])
        print(row("  CPU, bare", fig[cpu % "bare"], "ms"))
        for mode, label in (("plain", "  CPU, sandboxed, -w PROJECT"),
                            ("plain_nofork", "  CPU, sandboxed -P 0"),
                            ("floor", "  CPU, cowfloor: COW traps, CONTINUE"),
                            ("cow", "  CPU, COW --workdir PROJECT")):
            if cpu % mode in fig:
                print(row(label, fig[cpu % mode], "ms", bare, *((floor,) if mode == "cow" else ())))


if __name__ == "__main__":
    def _row(label, value, unit, *bases):
        ratios = "  ".join(f"{value / b:6.2f}x {n}" for n, b in bases if b)
        return f"  {label:<40} {value:10.1f} {unit:<3} {ratios}"
    report(figures(sys.argv[1:] or None), _row)
