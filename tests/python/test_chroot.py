"""The virtual chroot from Python and the CLI: Sandbox(chroot=, fs_mount=),
--chroot/--fs-mount and the [filesystem] chroot/mount profile keys, on a
tiny rootfs of the static busybox.  Hostile probes reach the host marker
outside first; inside, Landlock is granted the marker too, so only the
view stops them."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import sandlock

BUSYBOX = "/bin/busybox"
SANDLOCK_BIN = Path(os.environ.get("SANDLOCK_BUILD") or
                    Path(__file__).resolve().parents[2] / "build") / "sandlock"

pytestmark = pytest.mark.skipif(not os.access(BUSYBOX, os.X_OK),
                                reason="no static busybox (apt-get install busybox-static)")


@pytest.fixture
def rootfs(tmpdir_path):
    """(tmp dir, rootfs): busybox applets, etc/hostname_marker, an absolute
    link etc/abs and a climbing link etc/relup to the host's tmp/marker."""
    d = Path(tmpdir_path)
    root = d / "root"
    for sub in ("bin", "etc", "work"):
        (root / sub).mkdir(parents=True)
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for a in ("sh", "ls", "cat", "echo"):
        os.symlink("/bin/busybox", str(root / "bin" / a))
    (root / "etc" / "hostname_marker").write_text("inroot\n")
    (d / "marker").write_text("HOSTSECRET\n")
    os.symlink(str(d / "marker"), str(root / "etc" / "abs"))
    os.symlink("../../marker", str(root / "etc" / "relup"))
    (d / "w").mkdir()
    return d, root


def test_python_chroot_sees_rootfs_and_blocks_escapes(rootfs):
    d, root = rootfs
    for probe in ("etc/abs", "etc/relup", "../marker"):  # the probes work outside
        assert (root / probe).read_text() == "HOSTSECRET\n"
    sb = sandlock.Sandbox(chroot=str(root), fs_mount={"/work": str(d / "w")},
                          fs_readable=[str(d)], timeout=60)
    r = sb.run(["sh", "-c", "ls /; cat /etc/hostname_marker; cat /etc/abs; cat /etc/relup;"
                "cat /../../marker; cat /proc/self/root%s; echo made > /work/f" % (d / "marker")])
    assert b"HOSTSECRET" not in r.stdout
    assert r.stdout == b"bin\netc\nwork\ninroot\n"
    assert (d / "w" / "f").read_text() == "made\n"


def test_python_bad_input(rootfs):
    d, root = rootfs
    with pytest.raises(sandlock.PolicyError, match="nonexistent-rootfs"):
        sandlock.Sandbox(chroot="/nonexistent-rootfs")
    with pytest.raises(sandlock.PolicyError, match="must be absolute"):
        sandlock.Sandbox(chroot=str(root), fs_mount={"work": str(d / "w")})
    with pytest.raises(sandlock.PolicyError, match="needs chroot"):
        sandlock.Sandbox(fs_mount={"/work": str(d / "w")})


def test_cli_chroot_fs_mount_ro_and_profile(rootfs, tmpdir_path):
    d, root = rootfs
    ro = d / "ro"
    ro.mkdir()
    (ro / "f").write_text("rodata\n")
    (root / "data").mkdir()
    script = "cat /data/f; echo x > /data/g || echo rofail; cat /etc/abs"
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--chroot", str(root),
                        "--fs-mount", "/data:%s:ro" % ro, "--", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "rodata\nrofail\n", r.stderr
    assert "Read-only file system" in r.stderr
    assert not (ro / "g").exists()
    prof = d / "p.toml"
    prof.write_text('[filesystem]\nchroot = "%s"\nmount = ["/data:%s:ro"]\n' % (root, ro))
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--profile-file", str(prof), "--",
                        "cat", "/data/f", "/etc/hostname_marker"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "rodata\ninroot\n", r.stderr
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--chroot", str(root), "--fs-mount", "/data",
                        "--", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "expected VIRTUAL:HOST[:ro]" in r.stderr
