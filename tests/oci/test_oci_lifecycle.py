"""sandlock-oci's runtime-spec operations, driven directly (create, start,
state, kill, delete, list, features) and through `podman run`."""
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time

import pytest

from conftest import OCI, PREFIX, alive, podman, unique, _rootfs_tar


def oci(root, *args):
    """Run the runtime.  Its stdio become the container's (a supervisor
    keeps them, as runc's container does), so they are files, not pipes
    a reader would wait on for EOF."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        r = subprocess.run([OCI, "--root", root] + list(args), stdin=subprocess.DEVNULL,
                           stdout=out, stderr=err, text=True, timeout=30)
        out.seek(0)
        err.seek(0)
        r.stdout, r.stderr = out.read(), err.read()
    return r


@pytest.fixture
def bundle():
    """A bundle (rootfs + config.json) and a private --root."""
    d = tempfile.mkdtemp(prefix=PREFIX + "bundle-", dir="/tmp")
    root = os.path.join(d, "state")
    os.mkdir(root, 0o700)
    tar = os.path.join(d, "rootfs.tar")
    _rootfs_tar(tar)
    os.mkdir(os.path.join(d, "rootfs"))
    with tarfile.open(tar) as t:
        t.extractall(os.path.join(d, "rootfs"))
    config = {
        "ociVersion": "1.0.2",
        "process": {"args": ["/bin/sh", "-c", "echo started > /tmp/mark; sleep 30"],
                    "env": ["PATH=/bin"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
        "root": {"path": "rootfs"},
        "hostname": "oci-test",
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                   {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                    "options": ["mode=1777"]}],
        "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}]},
    }

    def write(cfg):
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
    write(config)
    yield d, root, config, write
    for cid in os.listdir(root):
        if not cid.startswith("."):
            oci(root, "delete", "--force", cid)
    shutil.rmtree(d, ignore_errors=True)


def state(root, cid):
    r = oci(root, "state", cid)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_create_start_state_kill_delete(bundle):
    d, root, _, _ = bundle
    pidfile = os.path.join(d, "pid")
    r = oci(root, "create", "--bundle", d, "--pid-file", pidfile, "c1")
    assert r.returncode == 0, r.stderr
    st = state(root, "c1")
    assert st["status"] == "created" and st["id"] == "c1" and st["bundle"] == d
    pid = int(open(pidfile).read())
    assert st["pid"] == pid and alive(pid)
    # Parked before exec: the command has not run yet.
    time.sleep(0.3)
    assert state(root, "c1")["status"] == "created"
    assert oci(root, "start", "c1").returncode == 0
    assert state(root, "c1")["status"] == "running"
    # A second start is refused.
    r = oci(root, "start", "c1")
    assert r.returncode != 0 and "not created" in r.stderr
    # A running container is not deleted without --force.
    r = oci(root, "delete", "c1")
    assert r.returncode != 0 and "running" in r.stderr
    assert oci(root, "kill", "c1", "KILL").returncode == 0
    for _ in range(200):
        if state(root, "c1")["status"] == "stopped":
            break
        time.sleep(0.02)
    assert state(root, "c1")["status"] == "stopped"
    assert not alive(pid)
    assert oci(root, "delete", "c1").returncode == 0
    assert not os.path.exists(os.path.join(root, "c1"))
    r = oci(root, "state", "c1")
    assert r.returncode != 0 and "does not exist" in r.stderr


def test_delete_of_created_container_ends_it(bundle):
    d, root, _, _ = bundle
    pidfile = os.path.join(d, "pid")
    assert oci(root, "create", "--bundle", d, "--pid-file", pidfile, "c2").returncode == 0
    pid = int(open(pidfile).read())
    assert oci(root, "delete", "c2").returncode == 0
    assert not alive(pid) and not os.path.exists(os.path.join(root, "c2"))


def test_duplicate_id_and_unknown_container(bundle):
    d, root, _, _ = bundle
    assert oci(root, "create", "--bundle", d, "c3").returncode == 0
    r = oci(root, "create", "--bundle", d, "c3")
    assert r.returncode != 0 and "already exists" in r.stderr
    for cmd in (["start", "nope"], ["state", "nope"], ["kill", "nope"], ["delete", "nope"]):
        r = oci(root, *cmd)
        assert r.returncode != 0 and "does not exist" in r.stderr, cmd
    assert oci(root, "delete", "--force", "nope").returncode == 0


def test_list_and_features(bundle):
    d, root, _, _ = bundle
    assert oci(root, "create", "--bundle", d, "c4").returncode == 0
    r = oci(root, "list", "--format", "json")
    assert r.returncode == 0
    assert [(c["id"], c["status"]) for c in json.loads(r.stdout)] == [("c4", "created")]
    r = oci(root, "list", "-q")
    assert r.stdout.split() == ["c4"]
    f = json.loads(oci(root, "features").stdout)
    assert f["ociVersionMax"].startswith("1.") and f["linux"]["seccomp"]["enabled"]
    r = subprocess.run([OCI, "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "sandlock-oci" in r.stdout


def test_log_json_and_systemd_cgroup_flag(bundle):
    d, root, _, _ = bundle
    log = os.path.join(d, "log.json")
    r = subprocess.run([OCI, "--root", root, "--log", log, "--log-format", "json",
                        "--systemd-cgroup", "start", "missing"], capture_output=True, text=True)
    assert r.returncode != 0
    lines = [json.loads(x) for x in open(log)]
    assert any(x["level"] == "info" and "--systemd-cgroup" in x["msg"] for x in lines)
    assert any(x["level"] == "error" and "does not exist" in x["msg"] for x in lines)


@pytest.mark.parametrize("change, field", [
    (lambda c: c["linux"].update(uidMappings=[{"containerID": 0, "hostID": 1000, "size": 1}]),
     "linux.uidMappings"),
    (lambda c: c["linux"]["namespaces"].append({"type": "user"}), "user namespace"),
    (lambda c: c.update(hooks={"prestart": [{"path": "/bin/true"}]}), "hooks"),
    (lambda c: c["mounts"].append({"destination": "/x", "type": "nfs", "source": "h:/x"}),
     "type 'nfs'"),
    (lambda c: c["process"].update(user={"uid": 1000, "gid": 1000}), "process.user"),
    (lambda c: c["linux"].update(resources={"cpu": {"quota": 200000, "period": 100000}}),
     "linux.resources.cpu"),
    (lambda c: c["process"].update(terminal=True), "--console-socket"),
    (lambda c: c.update(annotations={"sandlock.no-such-option": "1"}), "sandlock.no-such-option"),
    (lambda c: c.update(annotations={
        "sandlock.http-allow": "GET 127.0.0.1/*; GET 127.0.0.1:99999/"}), "99999"),
    (lambda c: c["linux"].update(seccomp={"defaultAction": "SCMP_ACT_NOTIFY"}),
     "linux.seccomp.defaultAction"),
    (lambda c: c["linux"].update(maskedPaths=["/etc/../bin/sh"]), "linux.maskedPaths[0]"),
])
def test_unhonourable_settings_fail_create_naming_the_field(bundle, change, field):
    d, root, config, write = bundle
    cfg = json.loads(json.dumps(config))
    change(cfg)
    write(cfg)
    r = oci(root, "create", "--bundle", d, "bad")
    assert r.returncode != 0
    assert field in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(root, "bad")), "a failed create left its state"


def test_read_only_paths_in_read_only_places_or_missing_are_accepted(bundle):
    d, root, config, write = bundle
    cfg = json.loads(json.dumps(config))
    cfg["linux"]["readonlyPaths"] = ["/proc/sys", "/no/such/dir"]
    cfg["linux"]["maskedPaths"] = ["/proc/kcore", "/no/such/file"]
    write(cfg)
    r = oci(root, "create", "--bundle", d, "ro")
    assert r.returncode == 0, r.stderr
    assert oci(root, "delete", "--force", "ro").returncode == 0


RO_SCRIPT = ("echo x > /etc/new; echo etc=$?; echo y >> /etc/image-file; echo file=$?; "
             "echo z >> /bin/probe; echo bb=$?; ln /etc/image-file /x; echo ln=$?; "
             "mv /etc/inner /etc/moved; echo mv=$?; echo w > /root/w; echo root=$?")


def run_to_end(root, d, cid):
    """Create and start cid, wait until it stopped, delete it."""
    assert oci(root, "create", "--bundle", d, cid).returncode == 0
    assert oci(root, "start", cid).returncode == 0
    for _ in range(500):
        if state(root, cid)["status"] == "stopped":
            break
        time.sleep(0.02)
    assert oci(root, "delete", cid).returncode == 0


@pytest.mark.parametrize("ro", [False, True])
def test_read_only_paths_in_the_writable_rootfs_take_no_writes(bundle, ro):
    d, root, config, write = bundle
    out = os.path.join(d, "out")
    os.mkdir(out)
    cfg = json.loads(json.dumps(config))
    cfg["process"]["args"] = ["/bin/sh", "-c", "(%s) > /out/r 2>&1" % RO_SCRIPT]
    cfg["mounts"].append({"destination": "/out", "type": "bind", "source": out,
                          "options": ["rbind", "rw"]})
    if ro:
        cfg["linux"]["readonlyPaths"] = ["/etc", "/bin/probe", "/proc/sys", "/no/such"]
    write(cfg)
    run_to_end(root, d, "rw")
    got = dict(l.split("=") for l in open(os.path.join(out, "r")).read().split()
               if "=" in l and l.split("=")[0] in ("etc", "file", "bb", "ln", "mv", "root"))
    rootfs = os.path.join(d, "rootfs")
    if not ro:
        # The probe works: every write reaches the writable rootfs.
        assert got == {"etc": "0", "file": "0", "bb": "0", "ln": "0", "mv": "0", "root": "0"}
        return
    # Read-only paths: no write, link or rename there; the rest is writable.
    assert got == {"etc": "1", "file": "1", "bb": "1", "ln": "1", "mv": "1", "root": "0"}, got
    assert not os.path.exists(os.path.join(rootfs, "etc", "new"))
    assert open(os.path.join(rootfs, "etc", "image-file")).read() == "from-the-image\n"
    assert os.path.isdir(os.path.join(rootfs, "etc", "inner"))


def test_podman_run_output_and_exit_codes(image):
    r = podman("run", "--rm", "--name", unique(), image, "/bin/echo", "hello from sandlock")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello from sandlock\n"
    assert podman("run", "--rm", image, "/bin/sh", "-c", "exit 42").returncode == 42
    # Death by a signal: the engine reports 128+N, as with runc.
    assert podman("run", "--rm", image, "/bin/sh", "-c", "kill -KILL $$").returncode == 137
    r = podman("run", "--rm", image, "/no/such/program")
    assert r.returncode in (126, 127), (r.returncode, r.stderr)


def test_podman_rm_leaves_nothing_behind(image):
    name = unique()
    before = set(os.listdir("/run/sandlock-oci")) if os.path.isdir("/run/sandlock-oci") else set()
    r = podman("run", "--rm", "--name", name, "--tmpfs", "/scratch", image,
               "/bin/sh", "-c", "echo x > /scratch/f; sleep 0.2 & echo done")
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    after = set(os.listdir("/run/sandlock-oci"))
    assert after - before <= {".helper"}, "state or scratch dirs left: %s" % (after - before)
    assert podman("ps", "-a", "--filter", "name=" + name, "-q").stdout.strip() == ""
    # No supervisor or sandboxed process of it runs on.
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert name not in out
