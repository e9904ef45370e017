"""Shared fixtures for the sandlock Python tests (pytest)."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

# `make asan` preloads the sanitizer runtimes into this interpreter; the
# programs the tests run (sandboxed or not) must not load them too, except
# the ones that load the sanitized library themselves (asan_host).
ASAN_PRELOAD = (os.environ.pop("LD_PRELOAD") if "libasan" in os.environ.get("LD_PRELOAD", "")
                else "")
# What a sandboxed Python that imports sandlock must also read under
# `make asan`: the runtime reads its options (and the memory map) in /proc.
ASAN_GUEST_READ = ["/proc"] if ASAN_PRELOAD else []
# How a C program that links the sanitized library is built.
ASAN_CFLAGS = ["-fsanitize=address,undefined"] if ASAN_PRELOAD else []


def asan_host(env):
    """env, for a Python that imports sandlock (on the host, or as a guest,
    which also needs ASAN_GUEST_READ):
    under `make asan` the library it loads is sanitized, so the runtimes must
    be preloaded as they were here (or ASan aborts: 'runtime does not come
    first'); asan_site/sitecustomize.py then takes them out of what that
    Python starts.  Without `make asan`, env unchanged."""
    if ASAN_PRELOAD:
        env["LD_PRELOAD"] = ASAN_PRELOAD
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):  # Python's own leaks are not ours
            if k in os.environ:
                env[k] = os.environ[k]
        site = os.path.join(HERE, "asan_site")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    return env


import sandlock  # noqa: E402

# The CLI reads a failed run's first Landlock refusal from the audit log
# where it can (root, audit on): what the runs of the suite say must not
# depend on the host's audit state, nor on test_explain_audit turning audit
# on meanwhile in another checkout; that file asks for it explicitly.
os.environ["SANDLOCK_AUDIT"] = "off"

# What a dynamically linked /bin/cat or /usr/bin/python3 needs to start.
SYSTEM = ["/usr", "/lib", "/lib64", "/bin", "/etc"]
PY = "/usr/bin/python3"


def alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before / while reading
        return False


@pytest.fixture
def tmpdir_path():
    d = tempfile.mkdtemp(prefix="sandlock-pytest-", dir="/tmp")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def sb():
    return sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)


@pytest.fixture
def host_hostname():
    with open("/etc/hostname", "rb") as f:
        return f.read()


# ---- pause by the cgroup v2 freezer (test_freezer.py, test_handles.py) ----

def _v2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    return None


def v2_group_dir(pid):
    """The v2 cgroup directory pid is in, or None (root group, no v2, no freezer)."""
    mnt = _v2_mount()
    with open("/proc/%d/cgroup" % pid) as f:
        rel = [l.strip()[3:] for l in f if l.startswith("0::")]
    if not mnt or not rel or rel[0] == "/":
        return None
    d = mnt + rel[0]
    return d if os.path.exists(os.path.join(d, "cgroup.freeze")) else None


def cgroup_frozen(d):
    with open(os.path.join(d, "cgroup.events")) as f:
        return "frozen 1" in f.read().split("\n")


def paused(pid):
    """pause() took hold of pid: its v2 group frozen, else a SIGSTOP ('T')."""
    d = v2_group_dir(pid)
    if d is not None and cgroup_frozen(d):
        return True
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


@pytest.fixture
def runtime():
    """A private XDG_RUNTIME_DIR, so tests never see each other's runs."""
    d = tempfile.mkdtemp(prefix="sandlock-xdg-")
    os.chmod(d, 0o700)
    yield d, dict(os.environ, XDG_RUNTIME_DIR=d)
    subprocess.run(["rm", "-rf", d])
