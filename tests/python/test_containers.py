"""sandlock under a container's default seccomp profile, without a container.

Docker's and Kubernetes' RuntimeDefault profiles allow ptrace,
process_vm_readv/writev, pidfd_getfd and kcmp only with CAP_SYS_PTRACE,
which a container does not get by default.  build/helpers/nosysptrace
installs a filter that answers EPERM for exactly those and runs the CLI
under it, so every sandbox it starts lives under that filter too.  The
real-container suite (podman, four configurations) is `make
test-containers` (tests/containers/).
"""
import ctypes
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = str(BUILD / "sandlock")
NOPTRACE = str(BUILD / "helpers" / "nosysptrace")
SYS_RO = [a for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)
          for a in ("-r", d)]
PY = "/usr/bin/python3"

# pidfd_getfd on ourselves: allowed by ptrace's rules, so only a seccomp
# filter can refuse it.  Prints the errno name, or "ok".
GETFD_PROBE = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
pfd = os.pidfd_open(os.getpid())
r = libc.syscall(438, pfd, pfd, 0)
print("ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
"""


def under_filter(*args, timeout=60):
    return subprocess.run([NOPTRACE, *args], capture_output=True, text=True,
                          timeout=timeout)


def test_the_filter_refuses_pidfd_getfd():
    """The control: the probe works bare and is refused under the filter."""
    bare = subprocess.run([PY, "-c", GETFD_PROBE], capture_output=True, text=True)
    assert bare.stdout.strip() == "ok", bare
    r = under_filter(PY, "-c", GETFD_PROBE)
    assert r.stdout.strip() == "EPERM", r


def test_a_run_starts_without_pidfd_getfd():
    """The listener reaches the supervisor without pidfd_getfd (it failed
    with 'sandlock: pidfd_getfd: EPERM', exit 125)."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", "/bin/echo", "hi")
    assert (r.returncode, r.stdout, r.stderr) == (0, "hi\n", "")


def test_many_runs_in_a_row():
    """The hand-over helper is reaped each time: nothing left behind."""
    script = "for i in 1 2 3 4 5 6 7 8; do %s run %s -- /bin/true || exit 1; done" % (
        SANDLOCK, " ".join(SYS_RO))
    r = under_filter("/bin/sh", "-c", script)
    assert r.returncode == 0, r


def test_the_program_sees_no_extra_child():
    """The helper that carried the listener is gone before the program runs:
    its only children are its own."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/proc", "--", "/bin/sh", "-c",
                     "cat /proc/$$/task/$$/children; echo; echo end")
    assert r.returncode == 0, r
    kids = r.stdout.split()
    assert kids[-1] == "end" and len(kids) == 2, r.stdout  # cat itself, nothing else


def test_proc_listing_is_served_on_behalf():
    """getdents on behalf (the /proc filter) works on a reopened directory
    installed back at the caller's fd (it failed with EPERM)."""
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/proc", "--", "/bin/sh", "-c",
                     "ls /proc | grep -c '^[0-9]'; echo $$")
    assert r.returncode == 0, r
    count, pid = r.stdout.split()
    assert 1 <= int(count) <= 4, r.stdout  # the sandbox's own processes only


def test_cow_listing_and_max_disk(tmp_path):
    """The COW merged listing and max_disk's accounting (on behalf, on the
    caller's offset) under the filter; the write past the limit fails."""
    wd = tmp_path / "wd"
    (wd / "d").mkdir(parents=True)
    (wd / "d" / "a").write_text("a\n")
    script = ("echo one > d/b && echo two >> d/b && ls d && cat d/b && "
              "head -c 3000000 /dev/zero > big; echo status=$?")
    r = under_filter(SANDLOCK, "run", *SYS_RO, "-r", "/dev", "-w", str(wd),
                     "--workdir", str(wd), "--max-disk", "1M", "--cwd", str(wd), "--",
                     "/bin/sh", "-c", script)
    assert r.stdout.split() == ["a", "b", "one", "two", "status=1"], r
    assert "No space left on device" in r.stderr
    assert (wd / "d" / "b").read_text() == "one\ntwo\n"
    assert (wd / "big").stat().st_size <= 1 << 20


def test_file_denial_still_holds(tmp_path):
    """Hostile: a file outside the granted trees, readable bare, stays out."""
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    assert subprocess.run(["/bin/cat", str(secret)], capture_output=True).returncode == 0
    r = under_filter(SANDLOCK, "run", *SYS_RO, "--", "/bin/cat", str(secret))
    assert r.returncode != 0 and "s3cret" not in r.stdout, r


def test_sockets_on_behalf_are_refused_not_skipped(tmp_path):
    """Hostile: without pidfd_getfd the unix-socket gate cannot act on the
    caller's socket: the connect is refused (EPERM), never let through."""
    import socket
    path = str(tmp_path / "s")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
             "try:\n s.connect(sys.argv[1]); print('connected')\n"
             "except OSError as e: print(e.errno)\n")
    bare = under_filter(PY, "-c", probe, path)
    assert bare.stdout.strip() == "connected", bare  # the probe works
    args = ["run", *SYS_RO, "-w", str(tmp_path), "--", PY, "-c", probe, path]
    granted = subprocess.run([SANDLOCK, *args], capture_output=True, text=True)
    assert granted.stdout.strip() == "connected", granted  # allowed with pidfd_getfd
    r = under_filter(SANDLOCK, *args)
    srv.close()
    assert r.stdout.strip() == "1", r  # EPERM
