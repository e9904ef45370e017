"""gpu_devices / --gpu: only the chosen GPUs' device nodes (and the
control nodes) can be opened.  No GPU here: stand-in nodes with NVIDIA's
and DRM's major numbers are made with mknod in a scratch /dev
(SANDLOCK_GPU_DEV_DIR).  With no driver behind them an open the sandbox
allows fails with ENXIO, one Landlock refuses with EACCES."""
import os
import subprocess

import pytest

import sandlock

PY = "/usr/bin/python3"
SYS = ["/usr", "/lib", "/lib64", "/bin", "/etc"]
NODES = ["nvidia0", "nvidia1", "nvidiactl", "dri/renderD128", "dri/renderD129"]
PROBE = r'''
import errno, os, sys
out = []
for n in sys.argv[2:]:
    try:
        os.close(os.open(os.path.join(sys.argv[1], n), os.O_RDWR))
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print(" ".join(out), os.environ.get("CUDA_VISIBLE_DEVICES", "-"))
'''
CLI = os.path.join(os.environ.get("SANDLOCK_BUILD", "build"), "sandlock")


@pytest.fixture
def devdir(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("mknod of stand-in GPU nodes needs root")
    d = tmp_path / "dev"
    (d / "dri").mkdir(parents=True)
    for name, major, minor in (("nvidia0", 195, 0), ("nvidia1", 195, 1),
                               ("nvidiactl", 195, 255), ("dri/renderD128", 226, 128),
                               ("dri/renderD129", 226, 129)):
        os.mknod(str(d / name), 0o666 | 0o020000, os.makedev(major, minor))
    monkeypatch.setenv("SANDLOCK_GPU_DEV_DIR", str(d))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return str(d)


def run(devdir, **kw):
    r = sandlock.Sandbox(fs_readable=SYS, **kw).run([PY, "-c", PROBE, devdir, *NODES])
    assert r.exit_code == 0, r.stderr
    return r.stdout.decode().split()


def test_only_the_chosen_gpu_nodes_open(devdir):
    outside = subprocess.run([PY, "-c", PROBE, devdir, *NODES], capture_output=True, text=True)
    assert outside.stdout.split() == ["ENXIO"] * 5 + ["-"]  # the probe reaches the nodes
    assert run(devdir) == ["EACCES"] * 5 + ["-"]
    assert run(devdir, gpu_devices=[0]) == ["ENXIO", "EACCES", "ENXIO", "ENXIO", "EACCES", "0"]
    assert run(devdir, gpu_devices=[1, 0]) == ["ENXIO"] * 5 + ["1,0"]
    assert run(devdir, gpu_devices=[]) == ["ENXIO"] * 5 + ["-"]
    # An explicit env setting wins over the one gpu_devices makes.
    assert run(devdir, gpu_devices=[0], env={"CUDA_VISIBLE_DEVICES": "7"})[-1] == "7"


def test_cli_and_profiles(devdir, tmp_path):
    base = [CLI, "run", *sum((["-r", d] for d in SYS), [])]
    r = subprocess.run(base + ["--gpu", "1", "--", PY, "-c", PROBE, devdir, *NODES],
                       capture_output=True, text=True)
    assert r.stdout.split() == ["EACCES", "ENXIO", "ENXIO", "EACCES", "ENXIO", "1"], r.stderr
    r = subprocess.run(base + ["--gpu", "all", "--", PY, "-c", PROBE, devdir, *NODES],
                       capture_output=True, text=True)
    assert r.stdout.split() == ["ENXIO"] * 5 + ["-"]
    bad = subprocess.run(base + ["--gpu", "first", "--", "/bin/true"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "--gpu" in bad.stderr and "0,2" in bad.stderr
    prof = tmp_path / "p.toml"
    prof.write_text("[limits]\ngpu_devices = [1]\n")
    r = subprocess.run(base + ["--profile-file", str(prof), "--", PY, "-c", PROBE, devdir,
                               *NODES], capture_output=True, text=True)
    assert r.stdout.split()[-1] == "1", r.stderr
    from sandlock.profile import load_profile
    assert list(load_profile(path=str(prof)).gpu_devices) == [1]


def test_gpu_with_chroot_is_refused(devdir, tmp_path):
    with pytest.raises(sandlock.SandlockError, match="gpu_devices"):
        sandlock.Sandbox(chroot=str(tmp_path), gpu_devices=[0]).run(["/bin/true"])
