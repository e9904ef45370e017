"""sandlock-oci vs runc (and crun where it runs) under podman: the wall
time of `podman run --rm IMAGE /bin/true`, N runs each, interleaved so
both see the same machine load; and the runtime alone (create + start +
wait + delete of the same bundle, no podman) for sandlock-oci.

  /usr/bin/python3 bench/oci.py            (root; podman, runc, busybox-static)
  BENCH_OCI_N=30 ...                       runs per runtime (default 20)

The image is busybox-static imported with `podman import`.  Both runtimes
get the same --ulimit flags: runc fails to raise podman's default
RLIMIT_NOFILE where the runtime lacks CAP_SYS_RESOURCE (sandlock-oci
lowers it to its own and logs it).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OCI = str(REPO / "build" / "sandlock-oci")
N = int(os.environ.get("BENCH_OCI_N", "20"))
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def runtimes():
    rts = [("sandlock-oci", OCI)]
    for name in ("runc", "crun"):
        path = shutil.which(name) or "/usr/sbin/" + name
        if os.path.exists(path):
            rts.append((name, path))
    return rts


def podman(runtime, *args):
    return subprocess.run(["podman", "--cgroup-manager", "cgroupfs", "--runtime", runtime]
                          + list(args), capture_output=True, text=True)


def make_image():
    name = "localhost/sandlock-oci-bench-%s:latest" % uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="sandlock-oci-bench-") as d:
        root = Path(d) / "rootfs"
        (root / "bin").mkdir(parents=True)
        for sub in ("etc", "tmp", "proc", "dev", "sys"):
            (root / sub).mkdir()
        shutil.copy("/bin/busybox", root / "bin" / "busybox")
        for applet in ("sh", "true"):
            os.symlink("busybox", root / "bin" / applet)
        tar = Path(d) / "rootfs.tar"
        with tarfile.open(tar, "w") as t:
            t.add(root, arcname=".")
        subprocess.run(["podman", "import", str(tar), name], check=True, capture_output=True)
    return name


def one(runtime, image):
    t0 = time.perf_counter()
    r = podman(runtime, "run", "--rm", *ULIMITS, image, "/bin/true")
    dt = time.perf_counter() - t0
    return dt if r.returncode == 0 else None, r.stderr.strip()


def runtime_alone(exe, bundle, tag):
    """create + start + wait + delete of runc's default bundle (`runc spec`,
    /bin/true, no terminal), no engine: the runtime's own cost."""
    root = Path(bundle) / ("state-" + tag)
    root.mkdir(mode=0o700)
    times = []
    for i in range(N):
        cid = "b%d" % i
        rt = [exe, "--root", str(root)]
        t0 = time.perf_counter()
        subprocess.run(rt + ["create", "--bundle", str(bundle), cid], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL)
        subprocess.run(rt + ["start", cid], check=True)
        while json.loads(subprocess.run(rt + ["state", cid], capture_output=True,
                                        text=True).stdout)["status"] != "stopped":
            time.sleep(0.001)
        subprocess.run(rt + ["delete", cid], check=True)
        times.append(time.perf_counter() - t0)
    return times


def bundle_alone(d):
    os.mkdir(os.path.join(d, "rootfs"))
    for sub in ("bin", "proc", "dev", "tmp", "sys"):
        os.mkdir(os.path.join(d, "rootfs", sub))
    shutil.copy("/bin/busybox", os.path.join(d, "rootfs", "bin", "busybox"))
    os.symlink("busybox", os.path.join(d, "rootfs", "bin", "true"))
    runc = dict(runtimes()).get("runc")
    if runc:
        subprocess.run([runc, "spec"], cwd=d, check=True)
        cfg = json.loads(Path(d, "config.json").read_text())
    else:
        cfg = {"ociVersion": "1.0.2", "root": {"path": "rootfs"},
               "process": {"cwd": "/", "user": {"uid": 0, "gid": 0}, "env": ["PATH=/bin"]},
               "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}]}
    cfg["process"]["args"] = ["/bin/true"]
    cfg["process"]["terminal"] = False
    Path(d, "config.json").write_text(json.dumps(cfg))
    return runc


def summary(label, times):
    ms = sorted(t * 1000 for t in times)
    print("%-34s median %7.1f ms   mean %7.1f   min %7.1f   max %7.1f   (n=%d)" % (
        label, statistics.median(ms), statistics.mean(ms), ms[0], ms[-1], len(ms)))


def main():
    if os.geteuid() != 0 or not shutil.which("podman"):
        sys.exit("bench/oci.py needs root and podman")
    if not os.path.exists(OCI):
        sys.exit("build/sandlock-oci is missing: make all")
    image = make_image()
    try:
        rts = runtimes()
        results = {name: [] for name, _ in rts}
        broken = {}
        for name, path in rts:  # warm-up: image layers, the seccomp step's copy
            dt, err = one(path, image)
            if dt is None:
                broken[name] = err
        for _ in range(N):
            for name, path in rts:
                if name in broken:
                    continue
                dt, err = one(path, image)
                if dt is None:
                    broken[name] = err
                else:
                    results[name].append(dt)
        print("podman run --rm IMAGE /bin/true (wall time, podman included):")
        for name, _ in rts:
            if results[name]:
                summary("  --runtime " + name, results[name])
            if name in broken:
                print("  --runtime %s: fails here: %s" % (name, broken[name][:200]))
        with tempfile.TemporaryDirectory(prefix="sandlock-oci-bench-") as d:
            runc = bundle_alone(d)
            print("the runtime alone (create + start + state until stopped + delete):")
            summary("  sandlock-oci", runtime_alone(OCI, d, "sandlock"))
            if runc:
                summary("  runc", runtime_alone(runc, d, "runc"))
    finally:
        subprocess.run(["podman", "rmi", "-f", image], capture_output=True)


if __name__ == "__main__":
    main()
