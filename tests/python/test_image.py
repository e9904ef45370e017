"""--image / Sandbox(image=): a local container image's filesystem as the
chroot, without a container runtime.  The image is made at test time from
busybox-static and `podman import`ed; nothing is pulled."""
import os
import shutil
import subprocess
import tarfile
import uuid

import pytest

import sandlock

CLI = os.path.join(os.environ.get("SANDLOCK_BUILD", "build"), "sandlock")
BUSYBOX = "/bin/busybox"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    if not shutil.which("podman"):
        pytest.skip("podman is not installed")
    if not os.path.exists(BUSYBOX):
        pytest.skip("busybox-static is not installed")
    root = tmp_path_factory.mktemp("imgroot")
    for d in ("bin", "etc", "work"):
        (root / d).mkdir()
    shutil.copy(BUSYBOX, str(root / "bin" / "busybox"))
    for app in ("sh", "echo", "cat", "ls", "pwd", "env", "touch"):
        os.symlink("busybox", str(root / "bin" / app))
    (root / "etc" / "marker").write_text("image-etc\n")
    tar = str(tmp_path_factory.mktemp("imgtar") / "root.tar")
    with tarfile.open(tar, "w") as t:
        t.add(str(root), arcname=".")
    ref = "localhost/sandlock-image-test-%s:1" % uuid.uuid4().hex[:8]
    r = subprocess.run(["podman", "import",
                        "--change", 'CMD ["/bin/sh","-c","echo $GREETING from $(pwd); cat /etc/marker"]',
                        "--change", "ENV GREETING=hello", "--change", "WORKDIR /work", tar, ref],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("podman import failed here: %s" % r.stderr.strip())
    yield ref
    subprocess.run(["podman", "rmi", "-f", ref], capture_output=True)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "sandlock" / "images"


def cli(*args):
    return subprocess.run([CLI, "run", *args], capture_output=True, text=True, timeout=120)


def test_image_command_env_workdir_and_cache(image, cache):
    r = cli("--image", image)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello from /work\nimage-etc\n"
    (tree,) = list(cache.iterdir())
    (tree / "reused").write_text("")  # the next run must use this tree, not a new one
    r = cli("--image", image, "--", "/bin/sh", "-c", "ls /; env")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == ["bin", "etc", "reused", "work"]
    assert "GREETING=hello" in r.stdout and "PATH=/usr/local/sbin:" in r.stdout
    assert [p.name for p in cache.iterdir()] == [tree.name]
    leftover = subprocess.run(["podman", "ps", "-a", "-q", "--filter", "ancestor=" + image],
                              capture_output=True, text=True).stdout
    assert leftover.strip() == ""  # the export's container was removed


def test_host_files_stay_outside(image, cache, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host")
    assert open(str(secret)).read() == "host"  # readable outside
    r = cli("--image", image, "--", "/bin/sh", "-c",
            "cat %s; cat /etc/hostname; cat /../../etc/marker" % secret)
    assert "host" not in r.stdout
    assert r.stdout == "image-etc\n"


def test_python_image(image, cache):
    sb = sandlock.Sandbox(image=image)
    assert sb.run([]).stdout == b"hello from /work\nimage-etc\n"
    assert sb.run(["/bin/pwd"]).stdout == b"/work\n"
    env = sandlock.Sandbox(image=image, env={"GREETING": "bye"}, cwd="/")
    assert env.run([]).stdout == b"bye from /\nimage-etc\n"


def test_missing_image_and_conflicts(image, cache, tmp_path):
    r = cli("--image", "localhost/no-such-image-%s:1" % uuid.uuid4().hex[:6], "--", "/bin/true")
    assert r.returncode == 125
    assert "not found in the local podman store" in r.stderr and "never pulled" in r.stderr
    r = cli("--image", image, "--chroot", str(tmp_path), "--", "/bin/true")
    assert r.returncode == 125 and "exclusive" in r.stderr
