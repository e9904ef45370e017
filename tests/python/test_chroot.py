"""The virtual chroot from Python and the CLI: Sandbox(chroot=, fs_mount=),
--chroot/--fs-mount and the [filesystem] chroot/mount profile keys, on a
tiny rootfs of the static busybox.  Hostile probes reach the host marker
outside first; inside, Landlock is granted the marker too (mounted at
/hostd, a guest path no probe names: under chroot fs_readable names guest
paths), so only the view stops them."""
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
    link etc/abs and a climbing link etc/relup to the host's tmp/marker (a
    link to the secret tmp/host/marker, whose directory can be mounted
    apart from tmp: HOSTD)."""
    d = Path(tmpdir_path)
    root = d / "root"
    for sub in ("bin", "etc", "work"):
        (root / sub).mkdir(parents=True)
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for a in ("sh", "ls", "cat", "echo"):
        os.symlink("/bin/busybox", str(root / "bin" / a))
    (root / "etc" / "hostname_marker").write_text("inroot\n")
    (d / "host").mkdir()
    (d / "host" / "marker").write_text("HOSTSECRET\n")
    os.symlink("host/marker", str(d / "marker"))
    os.symlink(str(d / "marker"), str(root / "etc" / "abs"))
    os.symlink("../../marker", str(root / "etc" / "relup"))
    (d / "w").mkdir()
    return d, root


def hostd(d):
    """The mount that has Landlock grant the marker's directory."""
    return {"/hostd": str(d / "host")}


def test_python_chroot_sees_rootfs_and_blocks_escapes(rootfs):
    d, root = rootfs
    for probe in ("etc/abs", "etc/relup", "../marker"):  # the probes work outside
        assert (root / probe).read_text() == "HOSTSECRET\n"
    sb = sandlock.Sandbox(chroot=str(root), fs_mount={"/work": str(d / "w"), **hostd(d)},
                          timeout=60)
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
    # The chroot performs every exec: policy_fn would never see one.
    with pytest.raises(sandlock.PolicyError, match="policy_fn with chroot"):
        sandlock.Sandbox(chroot=str(root), policy_fn=lambda ev, ctx: None).run(["true"])
    with pytest.raises(sandlock.PolicyError, match="needs chroot"):
        sandlock.Sandbox(fs_mount={"/work": str(d / "w")})


def test_a_mount_point_cannot_be_moved_linked_or_removed(rootfs):
    """A mount over a rootfs file hides it (an OCI masked path); renaming,
    linking or removing the mount point or a directory above it would
    give the hidden file a name the mount does not cover (the kernel
    refuses a mount point's: EBUSY, EXDEV)."""
    d, root = rootfs
    (root / "etc" / "inner").mkdir()
    (root / "etc" / "inner" / "secret").write_text("HIDDEN\n")
    (d / "empty").mkdir()
    script = ("cat /etc/inner/secret; mv /etc /etc2; mv /etc/inner /moved; "
              "ln /etc/inner/secret /hard; rm /etc/inner/secret; cat /etc2/inner/secret "
              "/moved/secret /hard; ls /")
    # The probe works: without the mount each route reaches the file.
    r = sandlock.Sandbox(chroot=str(root), fs_writable=["/"], timeout=60).run(
        ["sh", "-c", "ln /etc/inner/secret /hard && cat /hard; mv /etc/inner /moved && "
         "cat /moved/secret; mv /moved /etc/inner; rm /hard"])
    assert r.stdout == b"HIDDEN\nHIDDEN\n", r.stderr
    sb = sandlock.Sandbox(chroot=str(root), fs_writable=["/"], timeout=60,
                          fs_mount={"/etc/inner/secret": str(d / "empty")})
    r = sb.run(["sh", "-c", script])
    assert b"HIDDEN" not in r.stdout and r.stdout == b"bin\netc\nwork\n", (r.stdout, r.stderr)
    assert r.stderr.count(b"resource busy") == 2 and b"cross-device" in r.stderr, r.stderr
    assert (root / "etc" / "inner" / "secret").read_text() == "HIDDEN\n"


def test_a_file_mount_is_live_and_its_directory_stays_out_of_reach(rootfs):
    d, root = rootfs
    live, ro = d / "host" / "live", d / "host" / "ro"
    live.write_text("v1\n")
    ro.write_text("ro\n")
    # The probe works: the marker beside the files is readable outside.
    assert (d / "host" / "marker").read_text() == "HOSTSECRET\n"
    sb = sandlock.Sandbox(chroot=str(root), timeout=60,
                          fs_mount={"/etc/live": str(live)})
    r = sb.run(["sh", "-c", "cat /etc/live; echo guest >> /etc/live; cat /etc/live/../marker "
                "/etc/marker /etc/live/x; cat /etc/live"])
    assert r.stdout == b"v1\nv1\nguest\n", r.stderr
    assert live.read_text() == "v1\nguest\n" and b"HOSTSECRET" not in r.stdout
    assert b"Not a directory" in r.stderr
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--chroot", str(root), "--fs-mount",
                        "/etc/ro:%s:ro" % ro, "--", "sh", "-c", "cat /etc/ro; echo x > /etc/ro"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "ro\n" and "Read-only file system" in r.stderr, r.stderr
    assert ro.read_text() == "ro\n"
    with pytest.raises(sandlock.PolicyError, match="neither a directory nor a regular file"):
        sandlock.Sandbox(chroot=str(root), fs_mount={"/etc/null": "/dev/null"}).run(["true"])


def test_a_read_only_mount_over_its_own_place_in_a_writable_rootfs(rootfs):
    """An OCI readonlyPaths entry: the rootfs's /etc mapped read-only over
    /etc while / is writable.  Refused when another read-write mount
    shows the same directory (a second way in)."""
    d, root = rootfs
    base = [str(SANDLOCK_BIN), "run", "--chroot", str(root), "-w", "/"]
    script = ("echo x > /etc/hostname_marker; echo etc=$?; mkdir /etc/d; echo mk=$?; "
              "mv /etc /e2; echo mv=$?; echo y > /work/f; echo work=$?")
    # The probe works: without the mount, /etc takes the writes.
    r = subprocess.run(base + ["--", "sh", "-c", script + "; mv /e2 /etc"],
                       capture_output=True, text=True, timeout=60)
    assert "etc=0" in r.stdout and "mk=0" in r.stdout and "mv=0" in r.stdout, r.stderr
    (root / "etc" / "hostname_marker").write_text("inroot\n")
    os.rmdir(str(root / "etc" / "d"))
    r = subprocess.run(base + ["--fs-mount", "/etc:%s:ro" % (root / "etc"), "--", "sh", "-c",
                               script], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["etc=1", "mk=1", "mv=1", "work=0"], (r.stdout, r.stderr)
    assert (root / "etc" / "hostname_marker").read_text() == "inroot\n"
    r = subprocess.run(base + ["--fs-mount", "/etc:%s:ro" % (root / "etc"), "--fs-mount",
                               "/all:%s" % root, "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "writable through" in r.stderr, r.stderr


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


def test_python_fs_mount_ro_and_profile(rootfs):
    """fs_mount_ro and a profile's ":ro" mount: readable, writes refused
    with EROFS (nothing reaches the host directory), while an fs_mount
    beside it stays writable, which shows the write probe works."""
    d, root = rootfs
    ro = d / "ro"
    ro.mkdir()
    (ro / "f").write_text("rodata\n")
    for sub in ("data", "rw"):
        (root / sub).mkdir()
    script = ("cat /data/f; echo x > /data/g || echo rofail; echo y > /rw/g && echo rwok; "
              "cat /etc/abs")
    prof = d / "p.toml"
    prof.write_text('[filesystem]\nchroot = "%s"\nmount = ["/data:%s:ro", "/rw:%s"]\n'
                    % (root, ro, d / "w"))
    for sb in (sandlock.Sandbox(chroot=str(root), fs_mount_ro={"/data": str(ro)},
                                fs_mount={"/rw": str(d / "w")}, timeout=60),
               sandlock.load_profile(path=str(prof), timeout=60)):
        assert sb.fs_mount_ro == {"/data": str(ro)} and sb.fs_mount == {"/rw": str(d / "w")}
        r = sb.run(["sh", "-c", script])
        assert r.stdout == b"rodata\nrofail\nrwok\n", r.stderr
        assert b"Read-only file system" in r.stderr
        assert not (ro / "g").exists() and (d / "w" / "g").read_text() == "y\n"
        (d / "w" / "g").unlink()
    with pytest.raises(sandlock.PolicyError, match="both fs_mount and fs_mount_ro"):
        sandlock.Sandbox(chroot=str(root), fs_mount_ro={"/data": str(ro)},
                         fs_mount={"/data": str(d / "w")})
    with pytest.raises(sandlock.PolicyError, match="fs_mount_ro"):
        sandlock.Sandbox(chroot=str(root), fs_mount_ro={"/data": str(ro) + ":ro"})


def tree(root):
    """path -> (type, link target or bytes) of everything under root."""
    out = {}
    for d, dirs, files in os.walk(str(root)):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, str(root))
            if os.path.islink(p):
                out[rel] = ("l", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("d", "")
            else:
                out[rel] = ("f", Path(p).read_bytes())
    return out


ROOTFS_EDIT = ("echo new > /etc/hostname_marker; echo made > /etc/x; rm /etc/relup; "
               "mkdir /opt; echo q > /opt/q; cd /etc; ln -s ../opt/q /etc/lq; cat lq; "
               "cat /etc/hostname_marker")


def test_python_cow_over_the_rootfs_dry_run_then_commit(rootfs):
    d, root = rootfs
    before = tree(root)
    sb = sandlock.Sandbox(chroot=str(root), workdir=str(root), timeout=60)
    dry = sb.dry_run(["sh", "-c", ROOTFS_EDIT])
    assert dry.stdout == b"q\nnew\n", dry.stderr
    assert [(c.kind, c.path) for c in dry.changes] == [
        ("M", "etc/hostname_marker"), ("A", "etc/lq"), ("D", "etc/relup"), ("A", "etc/x"),
        ("A", "opt"), ("A", "opt/q")]
    assert tree(root) == before
    r = sandlock.Sandbox(chroot=str(root), workdir=str(root),
                         on_exit=sandlock.BranchAction.COMMIT, timeout=60).run(
        ["sh", "-c", ROOTFS_EDIT])
    assert r.success, r.stderr
    assert (root / "etc" / "hostname_marker").read_text() == "new\n"
    assert (root / "opt" / "q").read_text() == "q\n"
    assert os.readlink(str(root / "etc" / "lq")) == "../opt/q"
    assert not os.path.lexists(str(root / "etc" / "relup"))


def test_python_cow_over_a_mount_with_max_disk(rootfs):
    """The reference layout: workdir is the host directory mounted at
    /work; the quota applies, the rootfs stays read-only."""
    d, root = rootfs
    w = d / "w"
    (w / "keep").write_text("k\n")
    sb = sandlock.Sandbox(chroot=str(root), fs_mount={"/work": str(w)}, workdir=str(w),
                          max_disk="64K", on_exit=sandlock.BranchAction.COMMIT,
                          timeout=60)
    r = sb.run(["sh", "-c", "cd /work && echo a > a && cat keep a && ls /work; "
                "echo no > /etc/no || echo rootfs-ro"])
    assert r.success, r.stderr
    assert r.stdout == b"k\na\na\nkeep\nrootfs-ro\n"
    assert (w / "a").read_text() == "a\n"
    assert not (root / "etc" / "no").exists()
    (w / "sub").mkdir()
    with pytest.raises(sandlock.PolicyError, match="inside the read-write fs_mount '/work'"):
        sandlock.Sandbox(chroot=str(root), fs_mount={"/work": str(w)}, workdir=str(w / "sub"))


def test_cli_chroot_workdir_dry_run_json(rootfs):
    import json
    d, root = rootfs
    before = tree(root)
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--chroot", str(root), "--workdir", str(root),
                        "--dry-run", "--json", "--", "sh", "-c", "echo x > /etc/new; rm /etc/abs"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.splitlines()[-1])["changes"] == [{"kind": "D", "path": "etc/abs"},
                                               {"kind": "A", "path": "etc/new"}]
    assert tree(root) == before
    r = subprocess.run([str(SANDLOCK_BIN), "run", "--chroot", str(root), "--workdir", str(d),
                        "--", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "with --chroot it must be the rootfs" in r.stderr


def test_programs_named_by_path_run_with_their_argv(rootfs):
    """sh runs '/bin/ls' with the same string as path and argv[0]: the
    rewrite to the host path moves argv[0] aside, so busybox still sees
    "ls" (before: ENAMETOOLONG).  Under COW over the rootfs, a program
    the guest installed in the run (a staged busybox copy and a staged link
    to it) runs from the layer."""
    d, root = rootfs
    r = sandlock.Sandbox(chroot=str(root), timeout=60).run(
        ["sh", "-c", "/bin/ls /; cd /etc && ../bin/echo rel ok; /bin/sh -c '/bin/echo nested'"])
    assert r.stdout == b"bin\netc\nwork\nrel ok\nnested\n", r.stderr
    before = tree(root)
    r = sandlock.Sandbox(chroot=str(root), workdir=str(root),
                         on_exit="abort", timeout=60).run(
        ["sh", "-c", "cp /bin/busybox /bin/bb2 && ln -s /bin/bb2 /bin/pwd && cd /etc && /bin/pwd && "
                     "printf '#!/bin/sh\\necho no\\n' > /bin/tool && "
                     "chmod +x /bin/tool && tool || echo refused"])
    # A script's #! interpreter is looked up by the kernel on the host:
    # this rootfs's /bin/sh is not the host's, so it is refused (README).
    assert r.stdout == b"/etc\nrefused\n", r.stderr
    assert tree(root) == before


def test_python_fs_lists_are_guest_paths(rootfs):
    """fs_writable / fs_denied name guest paths (the reference joins them to
    the rootfs): the guest's /tmp becomes writable and its file denied; a
    host path (readable outside, the control) grants nothing, and a missing
    guest path is skipped."""
    d, root = rootfs
    (root / "tmp").mkdir()
    assert (d / "host" / "marker").read_text() == "HOSTSECRET\n"
    script = ("echo hi > /tmp/f && cat /tmp/f || echo ro; cat /etc/hostname_marker || echo denied; "
              "cat %s/marker || echo none" % (d / "host"))
    r = sandlock.Sandbox(chroot=str(root), timeout=60).run(["sh", "-c", script])
    assert r.stdout == b"ro\ninroot\nnone\n", r.stderr
    r = sandlock.Sandbox(chroot=str(root), fs_writable=["/tmp"], fs_denied=["/etc/hostname_marker"],
                         fs_readable=[str(d / "host"), "/no/such/dir"], timeout=60).run(
        ["sh", "-c", script])
    assert r.stdout == b"hi\ndenied\nnone\n", r.stderr
    assert (root / "tmp" / "f").read_text() == "hi\n"


def test_cli_fs_flags_are_guest_paths(rootfs):
    """--chroot with -r/-w/-d: guest paths; a '..' climb or a link out of
    the rootfs grants nothing outside it; -w inside a :ro mount is refused
    naming the flag."""
    d, root = rootfs
    (root / "tmp").mkdir()
    ro = d / "ro"
    ro.mkdir()
    base = [str(SANDLOCK_BIN), "run", "--chroot", str(root), "--fs-mount", "/data:%s:ro" % ro]
    r = subprocess.run(base + ["-w", "/../../tmp", "-r", "/etc/abs", "-r", "/etc/relup",
                               "-d", "/missing", "--", "sh", "-c",
                               "echo hi > /tmp/f && cat /tmp/f /etc/abs /etc/relup"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout == "hi\n", r.stderr
    assert (root / "tmp" / "f").read_text() == "hi\n"
    r = subprocess.run(base + ["-w", "/data/sub", "-w", "/data", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "-w/--fs-write '/data' is inside the read-only --fs-mount '/data'" in r.stderr
