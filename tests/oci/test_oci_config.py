"""config.json translated by intent, through podman: env/cwd/user, bind
mounts, --read-only + --tmpfs, limits, the network, annotations; and the
containment probes (each first shown to work outside the sandbox)."""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from conftest import PROBE, podman


def run(image, *cmd, opts=(), **kw):
    return podman("run", "--rm", *opts, image, *cmd, **kw)


def test_env_cwd_hostname_and_no_runtime_env(image):
    env = dict(os.environ, SANDLOCK_OCI_LEAK_PROBE="leaked")
    r = run(image, "/bin/sh", "-c", "echo $FOO; pwd; hostname; id -u; env",
            opts=("-e", "FOO=bar baz", "-w", "/tmp", "--hostname", "oci-host"), env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:4] == ["bar baz", "/tmp", "oci-host", "0"]
    assert "SANDLOCK_OCI_LEAK_PROBE" not in r.stdout


def test_user_other_than_the_runtimes_is_refused_by_name(image):
    assert run(image, "/bin/id", "-u", opts=("--user", "0:0")).stdout == "0\n"
    r = run(image, "/bin/id", opts=("--user", "1000:1000"))
    assert r.returncode != 0 and "process.user 1000:1000" in r.stderr, r.stderr
    assert "--user 0:0" in r.stderr and "runc" in r.stderr, r.stderr  # the ways out
    # Why: the kernel would run the command by its host path in the
    # engine's storage, which user 1000 cannot traverse.
    storage = subprocess.run(["podman", "info", "-f", "{{.Store.GraphRoot}}"],
                             capture_output=True, text=True).stdout.strip()
    probe = subprocess.run(["/bin/ls", storage], preexec_fn=lambda: (os.setgid(1000),
                                                                     os.setuid(1000)),
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "Permission denied" in probe.stderr, probe


def test_bind_mounts_read_write_and_read_only(image, hostdir):
    with open(os.path.join(hostdir, "f"), "w") as f:
        f.write("from-host\n")
    r = run(image, "/bin/sh", "-c", "cat /data/f && echo new > /data/g",
            opts=("-v", hostdir + ":/data"))
    assert r.returncode == 0 and r.stdout == "from-host\n", r.stderr
    assert open(os.path.join(hostdir, "g")).read() == "new\n"
    r = run(image, "/bin/sh", "-c", "cat /data/f; echo x > /data/h",
            opts=("-v", hostdir + ":/data:ro"))
    assert r.stdout == "from-host\n"
    assert r.returncode != 0 and "Read-only file system" in r.stderr
    assert not os.path.exists(os.path.join(hostdir, "h"))


def test_single_file_bind_mounts_are_live_both_ways(image, hostdir, cname):
    live = os.path.join(hostdir, "live")
    with open(live, "w") as f:
        f.write("v1\n")
    with open(os.path.join(hostdir, "secret"), "w") as f:
        f.write("host-secret\n")
    script = ("cat /etc/live; echo from-guest >> /etc/live; i=0; "
              "until grep -q v2 /etc/live; do sleep 0.1; i=$((i+1)); [ $i -gt 300 ] && exit 3; "
              "done; echo saw-v2; /bin/probe read /etc/live/../secret; "
              "/bin/probe readat /etc live/../secret; /bin/probe read /etc/secret; true")
    podman("run", "-d", "--name", cname, "-v", live + ":/etc/live", image, "/bin/sh", "-c",
           script, check=True)
    # The guest's write reaches the host's file, the host's the guest's.
    for _ in range(100):
        if "from-guest" in open(live).read():
            break
        time.sleep(0.1)
    assert open(live).read() == "v1\nfrom-guest\n"
    with open(live, "a") as f:
        f.write("v2\n")
    assert podman("wait", cname).stdout.strip() == "0"
    out = podman("logs", cname).stdout.splitlines()
    assert out[:2] == ["v1", "saw-v2"], out
    # The file's host directory stays out of reach (its other files).
    assert len(out) == 5 and all(l.startswith("err ") for l in out[2:]), out
    # Read-only: the guest's writes are refused, the host's still seen.
    r = run(image, "/bin/sh", "-c", "echo x >> /etc/live; cat /etc/live",
            opts=("-v", live + ":/etc/live:ro"))
    assert r.stdout == "v1\nfrom-guest\nv2\n" and "Read-only file system" in r.stderr, r.stderr
    assert open(live).read() == "v1\nfrom-guest\nv2\n"


def test_read_only_rootfs_with_tmpfs(image):
    r = run(image, "/bin/sh", "-c",
            "echo a > /etc/x; echo etc=$?; echo b > /scratch/y && cat /scratch/y",
            opts=("--read-only", "--tmpfs", "/scratch"))
    assert "etc=1" in r.stdout and r.stdout.endswith("b\n"), (r.stdout, r.stderr)
    # Without --read-only the rootfs (podman's container layer) is writable.
    r = run(image, "/bin/sh", "-c", "echo a > /etc/x && cat /etc/x")
    assert r.returncode == 0 and r.stdout == "a\n", r.stderr


def test_memory_limit(image):
    assert run(image, "/bin/probe", "memhog", "96").stdout == "ok 96\n"
    r = run(image, "/bin/probe", "memhog", "96", opts=("--memory", "32m"))
    assert r.returncode != 0 and "ok 96" not in r.stdout, (r.returncode, r.stdout)
    assert run(image, "/bin/probe", "memhog", "8", opts=("--memory", "32m")).returncode == 0


def test_pids_limit(image):
    script = "n=0; for i in 1 2 3 4 5 6 7 8; do sleep 1 & n=$((n+1)); done; wait; echo n=$n"
    r = run(image, "/bin/sh", "-c", script)
    assert r.returncode == 0 and "n=8" in r.stdout and "can't fork" not in r.stderr
    r = run(image, "/bin/sh", "-c", script, opts=("--pids-limit", "4"))
    assert "can't fork" in r.stderr, (r.stdout, r.stderr)


def test_cpu_quota(image):
    assert run(image, "/bin/true", opts=("--cpus", "0.5")).returncode == 0
    r = run(image, "/bin/true", opts=("--cpus", "2"))
    assert r.returncode != 0 and "linux.resources.cpu" in r.stderr, r.stderr


def test_annotation_sets_a_sandlock_option(image):
    assert run(image, "/bin/nproc", opts=("--annotation", "sandlock.num-cpus=1")).stdout == "1\n"
    r = run(image, "/bin/true", opts=("--annotation", "sandlock.bogus=1"))
    assert r.returncode != 0 and "sandlock.bogus" in r.stderr


@pytest.fixture
def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    hits = []

    def accept():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            hits.append(1)
            c.sendall(b"hello\n")
            c.close()
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield s.getsockname()[1], hits
    s.close()


def test_network_namespace_means_no_network_host_network_means_host(image, listener):
    port, hits = listener
    cmd = ("/bin/sh", "-c", "nc 127.0.0.1 %d </dev/null; echo rc=$?" % port)
    r = run(image, *cmd, opts=("--network", "host"))
    assert "hello" in r.stdout and hits, (r.stdout, r.stderr)
    n = len(hits)
    r = run(image, *cmd)  # podman's default: a network namespace
    assert "hello" not in r.stdout and len(hits) == n, (r.stdout, r.stderr)


# ---- containment: the guest reaches nothing outside its rootfs and mounts ----

@pytest.fixture
def secret(hostdir):
    path = os.path.join(hostdir, "secret")
    with open(path, "w") as f:
        f.write("host-secret\n")
    vol = os.path.join(hostdir, "vol")
    os.mkdir(vol)
    os.symlink(path, os.path.join(vol, "abs-link"))
    os.symlink("../" * 12 + path.lstrip("/"), os.path.join(vol, "rel-link"))
    return path, vol


def probe_host(*args):
    return subprocess.run([PROBE] + list(args), capture_output=True, text=True).stdout


def test_host_files_outside_rootfs_and_mounts_unreadable(image, secret):
    path, vol = secret
    # The probe works: on the host it reads the file by each route.
    assert probe_host("read", path) == "ok host-secret\n"
    assert probe_host("read", os.path.join(vol, "abs-link")) == "ok host-secret\n"
    assert probe_host("read", os.path.join(vol, "rel-link")) == "ok host-secret\n"
    assert probe_host("read", "/proc/self/root" + path) == "ok host-secret\n"
    assert probe_host("readat", vol, "../secret") == "ok host-secret\n"
    assert probe_host("read", "/proc/1/cmdline").startswith("ok")
    routes = [
        ("read", path),
        ("read", "/../../../.." + path),
        ("read", "/data/abs-link"),
        ("read", "/data/rel-link"),
        ("read", "/proc/self/root" + path),
        ("read", "/proc/1/root" + path),
        ("readat", "/data", "../secret"),
        ("readat", "/data", "../../../../.." + path),
        ("read", "/proc/1/cmdline"),
    ]
    script = "; ".join("/bin/probe " + " ".join(r) for r in routes)
    r = run(image, "/bin/sh", "-c", script, opts=("-v", vol + ":/data"))
    lines = r.stdout.splitlines()
    assert len(lines) == len(routes), (r.stdout, r.stderr)
    for route, line in zip(routes, lines):
        assert line.startswith("err "), (route, line)
    # The image's own files and the mount are readable: the probe is not broken.
    r = run(image, "/bin/probe", "read", "/etc/image-file")
    assert r.stdout == "ok from-the-image\n"


MASKED = "/etc/inner/image-file"
MASKED_ROUTES = [
    ("read", MASKED),
    ("read", "/etc/../etc/inner/./image-file"),
    ("readat", "/etc/inner", "image-file"),
    ("readat", "/bin", "../etc/inner/image-file"),
    ("read", "/tmp/link"),
    ("read", "/tmp/dir-link/image-file"),
]
# Then other names for it: a hard link, a rename of its directory, a
# rename of the file itself (each read, then undone).
MASKED_SCRIPT = "; ".join(
    ["ln -s %s /tmp/link; ln -s /etc/inner /tmp/dir-link" % MASKED]
    + ["/bin/probe " + " ".join(r) for r in MASKED_ROUTES]
    + ["ln %s /tmp/hard; /bin/probe read /tmp/hard" % MASKED,
       "mv /etc/inner /etc/moved && /bin/probe read /etc/moved/image-file; "
       "mv /etc/moved /etc/inner",
       "mv %s /etc/moved-file && /bin/probe read /etc/moved-file; "
       "mv /etc/moved-file %s" % (MASKED, MASKED),
       "rm %s; echo rm=$?; wc -c < %s" % (MASKED, MASKED)])


def probe_lines(r, n):
    lines = [l for l in r.stdout.splitlines() if l.startswith(("ok ", "err "))]
    assert len(lines) == n, (r.stdout, r.stderr)
    return lines


def test_masked_paths_are_empty_and_unreadable_by_every_route(image):
    n = len(MASKED_ROUTES) + 3
    # The probe works in the container: unmasked, every route reads the
    # file, and a hard link or a rename gives it another name.
    r = run(image, "/bin/sh", "-c", MASKED_SCRIPT)
    assert probe_lines(r, n) == ["ok from-the-image"] * n, r.stderr
    # Masked (podman --security-opt mask=): empty by each route (an empty
    # file, as runc's /dev/null), and it cannot be linked, moved or
    # removed from under its mask.
    r = run(image, "/bin/sh", "-c", MASKED_SCRIPT, opts=("--security-opt", "mask=" + MASKED))
    lines = [l for l in r.stdout.splitlines() if l.startswith(("ok ", "err "))]
    assert lines[:len(MASKED_ROUTES)] == ["ok "] * len(MASKED_ROUTES), (lines, r.stderr)
    assert "from-the-image" not in r.stdout, r.stdout
    for busy in ("rename '/etc/inner'", "rename '%s'" % MASKED, "remove '%s'" % MASKED):
        assert busy + ": Device or resource busy" in r.stderr, (busy, r.stderr)
    assert "cross-device" in r.stderr and r.stdout.endswith("rm=1\n0\n"), r.stdout
    # Nor can the guest write through it.
    r = run(image, "/bin/sh", "-c", "echo x > %s; echo rc=$?" % MASKED,
            opts=("--security-opt", "mask=" + MASKED))
    assert r.stdout == "rc=1\n" and "Read-only file system" in r.stderr, (r.stdout, r.stderr)


def test_default_masked_directory_of_sys_is_empty(image):
    host = sorted(os.listdir("/sys/dev/block"))
    assert host, "the host has no block devices to compare with"
    cmd = ("/bin/sh", "-c", "ls -A /sys/dev/block; /bin/probe readat /sys/dev block/%s/dev"
           % host[0])
    # podman's default maskedPaths hold /sys/dev/block; unmasked, the guest
    # sees what the host sees.
    r = run(image, *cmd, opts=("--security-opt", "unmask=/sys/dev/block"))
    assert r.stdout.split()[:len(host)] == host and "ok " in r.stdout, (r.stdout, r.stderr)
    r = run(image, *cmd)
    assert r.stdout.startswith("err "), (r.stdout, r.stderr)


def test_read_only_paths_take_no_writes(image):
    # podman's default readonlyPaths (/proc/sys, /proc/sysrq-trigger, ...)
    # lie in the read-only /proc view: a write is refused.
    r = run(image, "/bin/sh", "-c", "echo 1 > /proc/sys/kernel/ostype; echo rc=$?")
    assert "rc=1" in r.stdout and "Read-only file system" in r.stderr, (r.stdout, r.stderr)


def test_engine_seccomp_profile_is_applied(image, hostdir, tmp_path):
    # Without a profile of its own mkdir works in the container...
    assert run(image, "/bin/probe", "mkdir", "/tmp/d").stdout == "ok\n"
    # ... and a profile that denies it (podman --security-opt seccomp=) is
    # enforced on top of sandlock's filter.
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                      "errnoRet": 1}],
    }
    p = tmp_path / "profile.json"
    p.write_text(json.dumps(profile))
    r = run(image, "/bin/probe", "mkdir", "/tmp/d", opts=("--security-opt", "seccomp=%s" % p))
    assert r.stdout == "err EPERM\n", (r.stdout, r.stderr)
    # sandlock's own filter still holds under a profile that allows all.
    allow_all = tmp_path / "allow.json"
    allow_all.write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW"}))
    r = run(image, "/bin/sh", "-c", "/bin/probe read /proc/1/cmdline",
            opts=("--security-opt", "seccomp=%s" % allow_all))
    assert r.stdout.startswith("err "), r.stdout
