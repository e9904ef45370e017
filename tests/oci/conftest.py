"""Fixtures for the OCI runtime tests: podman driving build/sandlock-oci
(docs/oci.md) with an image built here from packages (busybox-static)
and the static probe (tests/oci/probe.c), imported with `podman import`."""
import os
import shutil
import subprocess
import tarfile
import tempfile
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build"))
OCI = os.path.join(BUILD, "sandlock-oci")
PROBE = os.path.join(BUILD, "helpers", "oci-probe")
RUNC = shutil.which("runc") or "/usr/sbin/runc"
BUSYBOX = "/bin/busybox"
# Every name this suite makes starts with it: another suite's podman
# objects are never touched.
PREFIX = "sandlock-oci-"


def podman(*args, runtime=OCI, check=False, timeout=60, **kw):
    """podman with the given runtime; crun refuses this kind of host's
    hybrid cgroups, so the cgroupfs manager is named."""
    cmd = ["podman", "--cgroup-manager", "cgroupfs", "--runtime", runtime] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s: %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def unique(kind="c"):
    return PREFIX + kind + "-" + uuid.uuid4().hex[:10]


def _busybox_is_static():
    out = subprocess.run(["file", "-L", BUSYBOX], capture_output=True, text=True).stdout
    return "statically linked" in out


def _rootfs_tar(path):
    """A rootfs of busybox (every applet linked) and the probe."""
    d = tempfile.mkdtemp(prefix=PREFIX + "rootfs-", dir="/tmp")
    try:
        for sub in ("bin", "etc", "tmp", "proc", "dev", "sys", "root"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(os.path.join(d, "tmp"), 0o1777)
        shutil.copy(BUSYBOX, os.path.join(d, "bin", "busybox"))
        shutil.copy(PROBE, os.path.join(d, "bin", "probe"))
        applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True,
                                 check=True).stdout.split()
        for a in applets:
            link = os.path.join(d, "bin", a)
            if not os.path.exists(link):
                os.symlink("busybox", link)
        with open(os.path.join(d, "etc", "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/sh\n")
        os.makedirs(os.path.join(d, "etc", "inner"))
        for name in ("image-file", "inner/image-file"):
            with open(os.path.join(d, "etc", name), "w") as f:
                f.write("from-the-image\n")
        with tarfile.open(path, "w") as t:
            t.add(d, arcname=".")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def image():
    if os.geteuid() != 0:
        pytest.skip("podman cannot start containers here: these tests need root")
    if not shutil.which("podman"):
        pytest.skip("podman cannot start containers here: podman is not installed "
                    "(.ci/run installs it)")
    if not os.path.exists(BUSYBOX) or not _busybox_is_static():
        pytest.skip("no static busybox to build the image from (apt-get install busybox-static)")
    assert os.path.exists(OCI), "build/sandlock-oci is missing: make all"
    name = "localhost/" + unique("img") + ":test"
    with tempfile.TemporaryDirectory(prefix=PREFIX) as t:
        tar = os.path.join(t, "rootfs.tar")
        _rootfs_tar(tar)
        r = subprocess.run(["podman", "import", tar, name], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip("podman cannot start containers here: podman import failed: " + r.stderr)
    yield name
    subprocess.run(["podman", "rmi", "-f", name], capture_output=True)


@pytest.fixture
def cname():
    """A container name, removed (with its container) after the test."""
    n = unique()
    yield n
    podman("rm", "-f", "-t", "0", n)


@pytest.fixture
def hostdir():
    d = tempfile.mkdtemp(prefix=PREFIX + "host-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)
