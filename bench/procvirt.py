"""The /proc views and determinism knobs of issue 10, for bench/run.py:
per-operation cost in a python3 loop, bare (no sandbox) vs a sandbox with
the knob, both measured in this one invocation.

  cpuinfo   open + read + close of /proc/cpuinfo: the real file vs the
            num_cpus view (opened on behalf, rewritten into a memfd)
  urandom   open + read(16) + close of /dev/urandom: the device vs the
            seeded stream (1 MiB memfd filled per open)
  listdir   os.listdir of a 2,000-entry directory: the kernel's order vs
            deterministic_dirs (listed on behalf, sorted)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
N = int(os.environ.get("BENCH_PROCVIRT_N", "300"))
REPS = int(os.environ.get("BENCH_REPS", "5"))

LOOP = """
import os, sys, time
what, n = sys.argv[1], int(sys.argv[2])
def cpuinfo():
    with open('/proc/cpuinfo', 'rb') as f: f.read()
def urandom():
    with open('/dev/urandom', 'rb', buffering=0) as f: f.read(16)
def listdir():
    os.listdir(sys.argv[3])
op = {'cpuinfo': cpuinfo, 'urandom': urandom, 'listdir': listdir}[what]
op()
t0 = time.perf_counter_ns()
for _ in range(n): op()
print((time.perf_counter_ns() - t0) / n)
"""


def figures():
    sys.path.insert(0, str(REPO / "python"))
    import sandlock

    d = tempfile.mkdtemp(prefix="sandlock-bench-")
    try:
        for i in range(2000):
            open(os.path.join(d, "f%05d" % ((i * 7919) % 2000)), "w").close()
        ro = SYS_RO + ["/proc", "/dev/urandom", d]
        boxes = {
            "cpuinfo": sandlock.Sandbox(fs_readable=ro, num_cpus=4),
            "urandom": sandlock.Sandbox(fs_readable=ro, random_seed=1),
            "listdir": sandlock.Sandbox(fs_readable=ro, deterministic_dirs=True),
        }
        fig = {}
        for what, sb in boxes.items():
            n = N if what != "listdir" else max(N // 10, 10)
            argv = ["/usr/bin/python3", "-c", LOOP, what, str(n), d]
            bare, boxed = [], []
            for _ in range(REPS):  # interleaved: both see the same load
                bare.append(float(subprocess.run(argv, capture_output=True, text=True,
                                                 check=True).stdout))
                r = sb.run(argv)
                boxed.append(float(r.stdout.decode()))
            fig["procvirt_%s_bare_ns" % what] = statistics.median(bare)
            fig["procvirt_%s_view_ns" % what] = statistics.median(boxed)
        return fig
    finally:
        shutil.rmtree(d, ignore_errors=True)


LABELS = (("cpuinfo", "open+read /proc/cpuinfo", "num_cpus view"),
          ("urandom", "open+read(16) /dev/urandom", "seeded stream"),
          ("listdir", "os.listdir, 2,000 entries", "deterministic_dirs"))


def report(fig, row):
    """Print the section with bench/run.py's row(); nothing if not measured."""
    if "procvirt_cpuinfo_bare_ns" not in fig:
        return
    print("/proc views and determinism (per operation, python3 loop)")
    for what, label, knob in LABELS:
        bare = fig["procvirt_%s_bare_ns" % what]
        print(row("%s, bare" % label, bare, "ns"))
        print(row("%s, %s" % (label, knob), fig["procvirt_%s_view_ns" % what], "ns",
                  ("vs bare", bare)))
