"""/proc virtualization and the determinism remainder (issue 10): num_cpus,
/proc/meminfo under max_memory, filtered mount tables, deterministic_dirs,
a seeded /dev/urandom, and the determinism pair, on real programs."""
import os
import random
import subprocess

import pytest

import sandlock
from conftest import PY, REPO, SYSTEM

CLI = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "sandlock")
PROC = SYSTEM + ["/proc"]
CPU_SYS = "/sys/devices/system/cpu"
HOST_CPUS = os.cpu_count()
# Shell pipelines run without the process-count builtin: with it every
# fork is trapped, and a child's SIGCHLD arriving while a fork waits for
# the supervisor can fail that fork ("Cannot fork"; seen on main too).
PIPES = dict(max_processes=None)


def out(sb, *argv):
    r = sb.run(list(argv))
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r.stdout.decode()


def sh(sb, script):
    return out(sb, "/bin/sh", "-c", script)


def cli(*args):
    return subprocess.run([CLI] + list(args), capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------- num_cpus

CPU_PROBE = ("nproc; getconf _NPROCESSORS_ONLN; cat %s/online %s/possible %s/present; "
             "grep -c ^processor /proc/cpuinfo; grep ^processor /proc/cpuinfo | tail -1 | "
             "tr -d ' \\t'; %s -c 'import os; print(os.cpu_count(), "
             "len(os.sched_getaffinity(0)))'") % (CPU_SYS, CPU_SYS, CPU_SYS, PY)


@pytest.mark.parametrize("n", [1, HOST_CPUS + 3])
def test_num_cpus_is_what_every_tool_sees(n):
    base = dict(fs_readable=PROC + [CPU_SYS], timeout=60, **PIPES)
    # control: without num_cpus the guest sees the host's CPUs
    real = sh(sandlock.Sandbox(**base), CPU_PROBE).split("\n")
    assert real[0] == str(HOST_CPUS) and real[5] == str(HOST_CPUS)
    got = sh(sandlock.Sandbox(num_cpus=n, **base), CPU_PROBE).split("\n")
    rng = "0" if n == 1 else "0-%d" % (n - 1)
    assert got[:9] == [str(n), str(n), rng, rng, rng, str(n), "processor:%d" % (n - 1),
                       "%d %d" % (n, n), ""], got


def test_num_cpus_cpuinfo_keeps_the_host_fields():
    sb = sandlock.Sandbox(fs_readable=PROC, num_cpus=3, timeout=60)
    text = out(sb, "/bin/cat", "/proc/cpuinfo")
    blocks = [b for b in text.split("\n\n") if b.startswith("processor")]
    assert len(blocks) == 3
    with open("/proc/cpuinfo") as f:
        host_first = f.read().split("\n\n")[0].splitlines()
    model = [l for l in host_first if l.startswith(("model name", "flags", "Features"))]
    for i, b in enumerate(blocks):
        lines = b.splitlines()
        assert lines[0].split(":")[1].strip() == str(i)
        for l in model:  # the model and flags of the host's CPUs, unchanged
            assert l in lines
    # /proc/stat: cpu0..cpu2 after the total line (control: the host's count)
    stat = [l.split()[0] for l in out(sb, "/bin/cat", "/proc/stat").splitlines()
            if l.startswith("cpu")]
    assert stat == ["cpu", "cpu0", "cpu1", "cpu2"]
    with open("/proc/stat") as f:
        assert sum(l.startswith("cpu") for l in f) == HOST_CPUS + 1


def test_num_cpus_cli_and_profile(tmpdir_path):
    r = cli("run", "-r", "/usr", "-r", "/lib", "-r", "/lib64", "-r", "/bin", "-r", "/etc",
            "--num-cpus", "4", "--", "/usr/bin/nproc")
    assert r.returncode == 0 and r.stdout == "4\n", r.stderr
    prof = os.path.join(tmpdir_path, "p.toml")
    with open(prof, "w") as f:
        f.write('[filesystem]\nread = %r\n[limits]\nnum_cpus = 6\n'
                '[determinism]\ndeterministic_dirs = true\n' % (SYSTEM + [tmpdir_path],))
    for name in "qxa":
        open(os.path.join(tmpdir_path, name), "w").close()
    r = cli("run", "--profile-file", prof, "--", "/bin/sh", "-c", "nproc; ls -f " + tmpdir_path)
    assert r.returncode == 0 and r.stdout.split() == ["6", ".", "..", "a", "p.toml", "q", "x"], r.stderr
    sb = sandlock.load_profile(path=prof)
    assert sb.num_cpus == 6 and sb.deterministic_dirs is True
    with open(prof, "w") as f:
        f.write('[limits]\nnum_cpus = 0\n')
    r = cli("run", "--profile-file", prof, "--", "/bin/true")
    assert r.returncode == 125 and "num_cpus" in r.stderr


@pytest.mark.parametrize("bad", ["0", "1025", "x", "-1"])
def test_num_cpus_cli_bad_value(bad):
    r = cli("run", "-r", "/usr", "--num-cpus", bad, "--", "/bin/true")
    assert r.returncode == 125 and "--num-cpus" in r.stderr and bad in r.stderr


@pytest.mark.parametrize("value,exc", [(0, ValueError), (1025, ValueError),
                                       ("2", TypeError), (True, TypeError)])
def test_num_cpus_bad_values(value, exc):
    with pytest.raises(exc):
        sandlock.Sandbox(fs_readable=SYSTEM, num_cpus=value)


# ---------------------------------------------------------------- meminfo

MEM_PROBE = """
vals = {}
for line in open('/proc/meminfo'):
    k, v = line.split(':')
    vals[k] = int(v.split()[0])
print(vals['MemTotal'], vals['MemFree'], vals['MemAvailable'])
"""


def test_meminfo_shows_the_memory_budget():
    with open("/proc/meminfo") as f:
        host_total = int(f.readline().split()[1])
    base = dict(fs_readable=PROC, timeout=60)
    total = int(out(sandlock.Sandbox(**base), PY, "-c", MEM_PROBE).split()[0])
    assert total == host_total  # control: the host's without a budget
    sb = sandlock.Sandbox(max_memory="256M", **base)
    total, free, avail = map(int, out(sb, PY, "-c", MEM_PROBE).split())
    assert total == 256 * 1024
    assert 0 < free <= avail <= total
    # free(1) agrees, and its "used" is not negative
    line = [l for l in sh(sb, "free -k").splitlines() if l.startswith("Mem:")][0].split()
    assert int(line[1]) == 256 * 1024
    assert 0 <= int(line[2]) <= int(line[1])
    assert int(line[3]) <= int(line[1]) and int(line[-1]) <= int(line[1])


# ---------------------------------------------------------------- mounts

def _points(table, field):
    return {l.split(" ")[field] for l in table.splitlines() if l}


def test_mount_tables_show_only_what_the_policy_reaches(tmpdir_path):
    with open("/proc/self/mounts") as f:
        host = _points(f.read(), 1)
    # control: the host has mount points outside the policy below
    assert host - {"/proc"}, host
    sb = sandlock.Sandbox(fs_readable=PROC, timeout=60, **PIPES)
    got = sh(sb, "cat /proc/self/mounts; echo --; cat /proc/mounts; echo --; "
                 "cat /proc/self/mountinfo; echo --; sleep 0 & cat /proc/$!/mounts 2>/dev/null;"
                 " wait; cat /proc/self/mountstats >/dev/null 2>&1 || echo denied")
    parts = got.split("--\n")
    assert _points(parts[0], 1) == {"/proc"}
    assert _points(parts[1], 1) == {"/proc"}
    assert _points(parts[2], 4) == {"/proc"}
    assert got.endswith("denied\n")
    # with / readable the guest may see every mount point
    sb = sandlock.Sandbox(fs_readable=["/"], timeout=60)
    seen = _points(out(sb, "/bin/cat", "/proc/self/mounts"), 1)
    with open("/proc/self/mounts") as f:  # (a container engine may mount meanwhile)
        assert seen in (host, _points(f.read(), 1))


# ---------------------------------------------------------------- deterministic_dirs

def _shuffled_dir(path, n, seed):
    names = ["f%05d-%s" % (i, "x" * (i % 40)) for i in range(n)]
    random.Random(seed).shuffle(names)
    for name in names:
        open(os.path.join(path, name), "w").close()
    return names


def test_deterministic_dirs_sorts_large_listings(tmpdir_path):
    names = _shuffled_dir(tmpdir_path, 3000, 1)  # ~200 KB of entries: many getdents calls
    want = sorted(names)
    assert os.listdir(tmpdir_path) != want  # control: the on-disk order is not sorted
    base = dict(fs_readable=SYSTEM + [tmpdir_path], timeout=60)
    ls = "ls -f %s" % tmpdir_path
    assert sh(sandlock.Sandbox(**base), ls).split() != [".", ".."] + want
    sb = sandlock.Sandbox(deterministic_dirs=True, **base)
    assert sh(sb, ls).split() == [".", ".."] + want
    # python's listdir twice in one process (a rewind), scandir, and telldir/seekdir
    code = ("import os, sys, ctypes; d = sys.argv[1]; a = os.listdir(d); b = os.listdir(d);"
            " print(a == b == sorted(a), len(a), [e.name for e in os.scandir(d)] == a)")
    assert out(sb, PY, "-c", code, tmpdir_path) == "True 3000 True\n"


def test_deterministic_dirs_in_proc_and_cli(tmpdir_path):
    _shuffled_dir(tmpdir_path, 50, 2)
    sb = sandlock.Sandbox(fs_readable=PROC, deterministic_dirs=True, timeout=60)
    entries = sh(sb, "ls -f /proc").split()
    assert entries[:2] == [".", ".."] and entries[2:] == sorted(entries[2:])
    r = cli("run", "-r", "/usr", "-r", "/lib", "-r", "/lib64", "-r", "/bin", "-r", "/etc",
            "-r", tmpdir_path, "--deterministic-dirs", "--", "/bin/ls", "-f", tmpdir_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[2:] == sorted(os.listdir(tmpdir_path))


def test_deterministic_dirs_not_a_directory_is_enotdir(tmpdir_path):
    code = ("import os, sys\ntry: os.listdir(sys.argv[1])\n"
            "except NotADirectoryError: print('ENOTDIR')")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, deterministic_dirs=True, timeout=60)
    assert out(sb, PY, "-c", code, "/etc/hostname") == "ENOTDIR\n"


# ---------------------------------------------------------------- /dev/urandom

URANDOM = ("head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'; echo; "
           "head -c 16 /dev/random | od -An -tx1 | tr -d ' \\n'; echo")
DEV = ["/dev/urandom", "/dev/random"]


def test_seeded_dev_urandom_repeats_and_changes_with_the_seed():
    base = dict(fs_readable=SYSTEM + DEV, timeout=60, **PIPES)
    free_a, free_b = sh(sandlock.Sandbox(**base), URANDOM), sh(sandlock.Sandbox(**base), URANDOM)
    assert free_a != free_b  # control: unseeded, the real device
    a = sh(sandlock.Sandbox(random_seed=5, **base), URANDOM)
    b = sh(sandlock.Sandbox(random_seed=5, **base), URANDOM)
    c = sh(sandlock.Sandbox(random_seed=6, **base), URANDOM)
    assert a == b and a != c
    assert len(a.split()[0]) == 64 and a.split()[0] != a.split()[1][:32] + "0" * 32


READS = """
import sys
f = open('/dev/urandom', 'rb', buffering=0)
size, total = int(sys.argv[1]), int(sys.argv[2])
data = b''
while len(data) < total:
    data += f.read(min(size, total - len(data)))
g = open('/dev/urandom', 'rb', buffering=0)
print(len(data), data[:4096].hex(), data[-64:].hex(), g.read(16).hex() != data[:16].hex())
"""


def test_seeded_dev_urandom_any_read_size_same_stream_no_end():
    sb = sandlock.Sandbox(fs_readable=SYSTEM + DEV, random_seed=9, timeout=60)
    total = 3 << 20  # more than a pipe holds: the feeder refills it as it drains
    small = out(sb, PY, "-c", READS, "7", str(1 << 16))
    big = out(sb, PY, "-c", READS, str(1 << 20), str(1 << 16))
    assert small == big  # the bytes do not depend on how they are read
    assert small.endswith(" True\n")  # a second open: a stream of its own
    n = out(sb, PY, "-c", READS, str(1 << 20), str(total)).split()[0]
    assert n == str(total)


def test_seeded_dev_urandom_leaves_nothing_behind():
    # a guest that opens many streams and exits without reading them
    code = "fs = [open('/dev/urandom', 'rb') for _ in range(50)]; print(len(fs[0].read(10)))"
    sb = sandlock.Sandbox(fs_readable=SYSTEM + DEV, random_seed=3, timeout=60)
    assert out(sb, PY, "-c", code) == "10\n"  # the first run opens sandlock's cached fds
    before = len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))
    for _ in range(3):
        assert out(sb, PY, "-c", code) == "10\n"
    # every write end closed, the feeder thread joined
    assert (len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))) == before


# ---------------------------------------------------------------- the determinism pair

PAIR = """
import ctypes, os, sys, time
print(time.strftime('%Y-%m-%d %H:%M', time.gmtime(time.time())))
print(os.urandom(16).hex())
with open('/dev/urandom', 'rb') as f:
    print(f.read(16).hex())
print(os.listdir(sys.argv[1]))
print(hex(id(object())), hex(ctypes.addressof(ctypes.create_string_buffer(64))))
"""


def test_determinism_pair_gives_byte_identical_output(tmpdir_path):
    d = os.path.join(tmpdir_path, "d")
    os.mkdir(d)
    _shuffled_dir(d, 40, 3)

    def run(seed, on=True):
        kw = dict(random_seed=seed, time_start="2000-01-01T00:00:00Z",
                  deterministic_dirs=True, no_randomize_memory=True) if on else {}
        sb = sandlock.Sandbox(fs_readable=SYSTEM + DEV + [d], timeout=60, **kw)
        r = sb.run([PY, "-c", PAIR, d])
        assert r.exit_code == 0, r.stderr
        return r.stdout

    a, b = run(11), run(11)
    assert a == b, (a, b)
    assert a.decode().startswith("2000-01-01 00:0")
    c = run(12)
    assert c != a and c.splitlines()[3] == a.splitlines()[3]  # same sorted listing
    # control: without the knobs two runs differ
    assert run(None, on=False) != run(None, on=False)


HOSTILE_MOUNTS = """
import os, threading
points = set()
def take(path, field=1):
    with open(path) as f:
        for line in f:
            points.add(line.split()[field])
fd = os.open('/proc/self/mounts', os.O_RDONLY)
take('/proc/self/fd/%d' % fd)                   # a reopen of the fd
take('/proc/thread-self/mounts')
take('/proc/%d/task/%d/mounts' % (os.getpid(), threading.get_native_id()))
take('/dev/fd/%d' % fd)
if os.path.islink('/etc/mtab'):
    take('/etc/mtab')
d = os.open('/proc/self', os.O_RDONLY | os.O_DIRECTORY)
with os.fdopen(os.open('mountinfo', os.O_RDONLY, dir_fd=d)) as f:  # relative to a dirfd
    points.update(line.split()[4] for line in f)
print(sorted(points))
"""


def test_mount_table_tricks_still_get_the_filtered_view():
    # control: outside, the same probe sees the host's whole table
    r = subprocess.run([PY, "-c", HOSTILE_MOUNTS], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() != "['/proc']", r.stderr
    sb = sandlock.Sandbox(fs_readable=PROC, timeout=60)
    assert out(sb, PY, "-c", HOSTILE_MOUNTS) == "['/proc']\n"
