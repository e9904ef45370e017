"""The first access Landlock refused a failed run, named without --trace,
read back from the kernel's audit log (src/run/auditlog.c, cli/denied.c).

It needs audit enabled and CAP_AUDIT_READ: as root, the fixture turns
audit on for each run only (and back to what it was), under a lock shared
by every copy of this suite on the machine, with the `-a task,never` rule
so that no process pays for syscall auditing afterwards.  Unprivileged,
the run keeps today's behaviour (the paths its command line names)."""
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from test_cli import BUILD, SYS_RO  # noqa: E402

SANDLOCK = str(BUILD / "sandlock")
NETLINK_AUDIT = 9
AUDIT_GET, AUDIT_SET, AUDIT_ADD_RULE = 1000, 1001, 1011
AUDIT_STATUS_ENABLED = 1
AUDIT_FILTER_TASK, AUDIT_NEVER = 1, 0
NLM_F_REQUEST, NLM_F_ACK = 1, 4
LOCK = "/tmp/sandlock-audit-test.lock"

if os.geteuid() != 0:
    pytest.skip("turning audit on needs root (the unprivileged side: "
                "test_unprivileged_runs_keep_the_named_path_line runs as nobody)",
                allow_module_level=True)


def _audit(kind, payload, reply=False):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    try:
        s.bind((0, 0))
        flags = NLM_F_REQUEST | (0 if reply else NLM_F_ACK)
        s.send(struct.pack("=IHHII", 16 + len(payload), kind, flags, 1, 0) + payload)
        data = s.recv(65536)
        length, typ = struct.unpack_from("=IH", data)
        if typ == 2:  # NLMSG_ERROR: the ack, errno in it (0: done)
            return -struct.unpack_from("=i", data, 16)[0]
        return data[16:length]
    finally:
        s.close()


def audit_enabled():
    return struct.unpack_from("=II", _audit(AUDIT_GET, b"", reply=True))[1]


def set_audit(on):
    err = _audit(AUDIT_SET, struct.pack("=II", AUDIT_STATUS_ENABLED, on))
    assert err == 0, os.strerror(err)


def never_audit_syscalls():
    # struct audit_rule_data: flags, action, field_count, mask[64],
    # fields[64], values[64], fieldflags[64], buflen.
    rule = struct.pack("=III", AUDIT_FILTER_TASK, AUDIT_NEVER, 0) + b"\xff" * 256 + \
        b"\0" * (3 * 256) + struct.pack("=I", 0)
    err = _audit(AUDIT_ADD_RULE, rule)
    assert err in (0, 17), os.strerror(err)  # EEXIST: already there


@contextmanager
def audit_on():
    """Audit on for the block only (one copy of the suite at a time)."""
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = audit_enabled()
        if before == 2:  # locked on by the admin: fine as it is
            yield
            return
        never_audit_syscalls()
        set_audit(1)
        try:
            yield
        finally:
            set_audit(before)


# conftest.py turns the CLI's audit reading off for the rest of the suite.
LISTENING = {k: v for k, v in os.environ.items() if k != "SANDLOCK_AUDIT"}


def run(*args, grants=SYS_RO, env=None):
    return subprocess.run([SANDLOCK, "run", *grants, *args], capture_output=True, text=True,
                          timeout=120, env=env or LISTENING)


def said(r):
    return [l for l in r.stderr.splitlines() if l.startswith("sandlock: ")]


def first_refused(r):
    return [l for l in said(r) if "the first access the sandbox refused" in l]


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "secret").write_text("secret\n")
    return d


def test_cat_of_a_refused_file_names_it_and_the_flag(data):
    assert subprocess.run(["cat", str(data / "secret")], capture_output=True).returncode == 0
    # Not on the command line: what namedpaths.c could never have said.
    script = "cat \"$(printf '%s/%s' " + str(data) + " secret)\""
    with audit_on():
        r = run("--", "/bin/sh", "-c", script)
        ok = run("-r", str(data), "--", "/bin/sh", "-c", script)
        js = run("--json", "--", "/bin/sh", "-c", script)
    assert r.returncode == 1 and "secret" not in r.stdout
    assert said(r) == ["sandlock: the first access the sandbox refused: read %s/secret "
                       "(Landlock: fs.read_file); it is not under any -r/-w; allow with -r %s"
                       % (data, data)], r.stderr
    assert ok.returncode == 0 and ok.stdout == "secret\n" and said(ok) == []
    # --json carries it as Python's Result.denied_access does.
    assert json.loads(js.stderr.splitlines()[-1])["denied_access"] == {
        "access": "fs.read_file", "path": "%s/secret" % data}, js.stderr


def test_a_shell_redirect_into_a_refused_directory_names_the_directory_and_w(data):
    with audit_on():
        r = run("-r", str(data), "--", "/bin/sh", "-c", "out=%s; date > $out/new" % data)
        ok = run("-w", str(data), "--", "/bin/sh", "-c", "out=%s; date > $out/new" % data)
    assert r.returncode != 0
    assert said(r) == ["sandlock: the first access the sandbox refused: write %s "
                       "(Landlock: fs.make_reg); it is not under any -w; allow with -w %s"
                       % (data, data)], r.stderr
    assert ok.returncode == 0 and (data / "new").exists() and said(ok) == []


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
def test_a_compiler_reading_a_refused_header(tmp_path):
    src, inc, out = tmp_path / "src", tmp_path / "inc", tmp_path / "out"
    for d in (src, inc, out):
        d.mkdir()
    (inc / "h.h").write_text("#define X 0\n")
    (src / "m.c").write_text('#include "h.h"\nint main(void) { return X; }\n')
    cmd = ["cc", "-I", str(inc), "-o", str(out / "m"), str(src / "m.c")]
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    (out / "m").unlink()
    with audit_on():
        r = run("-r", str(src), "-w", str(out), "--tmp", "--", *cmd)
    assert r.returncode != 0 and not (out / "m").exists()
    assert said(r) == ["sandlock: the first access the sandbox refused: read %s/h.h "
                       "(Landlock: fs.read_file); it is not under any -r/-w; allow with -r %s"
                       % (inc, inc)], r.stderr


def test_a_program_a_script_runs_but_may_not_execute(tmp_path):
    """An exec inside the program (not the command: that one is exit
    126's line) refused: execute PATH and the -r that allows it."""
    tools = tmp_path / "tools"
    tools.mkdir()
    tool = tools / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    assert subprocess.run([str(tool)], capture_output=True, text=True).stdout == "tool-ran\n"
    with audit_on():
        r = run("--", "/bin/sh", "-c", str(tool))
        ok = run("-r", str(tools), "--", "/bin/sh", "-c", str(tool))
    assert r.returncode != 0 and "tool-ran" not in r.stdout
    line = first_refused(r)
    assert len(line) == 1 and line[0].startswith(
        "sandlock: the first access the sandbox refused: execute %s (Landlock: fs.execute" % tool)
    assert line[0].endswith("it is not under any -r/-w; allow with -r %s" % tools), line
    assert ok.returncode == 0 and ok.stdout == "tool-ran\n" and said(ok) == []


def test_quiet_silences_it_and_trace_says_it_its_own_way(data):
    with audit_on():
        q = run("-q", "--", "cat", str(data / "secret"))
        t = run("--trace", "--", "cat", str(data / "secret"))
        off = run("--", "cat", str(data / "secret"), env=dict(LISTENING, SANDLOCK_AUDIT="off"))
    assert q.returncode == 1 and said(q) == [], q.stderr
    assert t.returncode == 1 and first_refused(t) == [], t.stderr
    # SANDLOCK_AUDIT=off: the command line's path, as without the audit log.
    assert off.returncode == 1 and first_refused(off) == [], off.stderr
    assert [l for l in said(off) if "named in its command line" in l], off.stderr


def test_a_command_that_may_not_be_executed_is_told_once(tmp_path):
    """Exit 126 has its own line (the -r that allows it); the audit log's
    record of the same refusal adds nothing."""
    tool = tmp_path / "tool.sh"
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    with audit_on():
        r = run("--", str(tool))
    assert r.returncode == 126 and first_refused(r) == [], r.stderr
    assert ("sandlock: cannot execute %s: not under any -r/-w; allow with -r %s"
            % (tool, tmp_path)) in said(r), r.stderr


def test_a_run_that_succeeds_or_fails_without_a_denial_says_nothing(data):
    with audit_on():
        ok = run("-r", str(data), "--", "cat", str(data / "secret"))
        no = run("--", "/bin/sh", "-c", "exit 3")
    assert ok.returncode == 0 and said(ok) == []
    assert no.returncode == 3 and said(no) == [], no.stderr


def test_another_sandboxs_denials_do_not_leak_into_ours(tmp_path):
    """A concurrent sandbox keeps being refused its own file (a different
    Landlock domain, its own creator pid): our line names only ours."""
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for d in (theirs, ours):
        d.mkdir()
        (d / "f").write_text("x\n")
    stop = threading.Event()
    seen = []

    def noisy():
        while not stop.is_set():
            seen.append(run("--", "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do "
                            "cat %s/f; done; sleep 0.05; cat %s/f" % (theirs, theirs)))

    with audit_on():
        t = threading.Thread(target=noisy)
        t.start()
        try:
            time.sleep(0.3)
            mine = [run("--", "/bin/sh", "-c", "sleep 0.1; cat %s/f" % ours) for _ in range(3)]
        finally:
            stop.set()
            t.join()
    assert seen, "the other sandbox never ran"
    for r in mine:
        assert r.returncode == 1
        assert first_refused(r) == ["sandlock: the first access the sandbox refused: read "
                                    "%s/f (Landlock: fs.read_file); it is not under any -r/-w; "
                                    "allow with -r %s" % (ours, ours)], r.stderr
    # And theirs named theirs (each run its own).
    assert all(str(theirs) in l for r in seen for l in first_refused(r))


def test_unprivileged_runs_keep_the_named_path_line(request):
    """Without CAP_AUDIT_READ (here: as nobody) the run cannot listen, so
    Landlock is not asked to log: the command line's path is named, as
    before, even with audit on."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("no setpriv")
    # Outside pytest's directory (0700 to nobody): the refusal is Landlock's.
    d = Path(tempfile.mkdtemp(prefix="sandlock-audit-"))
    request.addfinalizer(lambda: shutil.rmtree(d))
    os.chmod(d, 0o755)
    (d / "x").write_text("x\n")
    assert subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                           str(d / "x")], capture_output=True).returncode == 0
    probe = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                            SANDLOCK, "--version"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("nobody cannot run the build here")
    with audit_on():
        r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                            SANDLOCK, "run", *SYS_RO, "--", "cat", str(d / "x")],
                           capture_output=True, text=True, timeout=120, env=LISTENING)
    assert r.returncode == 1, r.stderr
    assert first_refused(r) == [], r.stderr
    assert [l for l in said(r) if "named in its command line" in l], r.stderr


def landlock_records(during):
    """The Landlock audit records (type, text) the host logged while
    during() ran, read as sandlock reads them (AUDIT_NLGRP_READLOG)."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    try:
        s.bind((0, 1))  # group 1: AUDIT_NLGRP_READLOG
        during()
        time.sleep(0.3)  # kauditd delivers asynchronously
        s.setblocking(False)
        found = []
        while True:
            try:
                data = s.recv(65536)
            except BlockingIOError:
                return found
            length, typ = struct.unpack_from("=IH", data)
            if typ in (1423, 1424):
                found.append((typ, data[16:length].decode(errors="replace")))
    finally:
        s.close()


def test_a_run_that_does_not_listen_adds_no_landlock_records(data):
    """-q (nobody reads the log): the program's denials are not logged,
    neither the command's own nor the opens sandlock performs on its
    behalf (-r /proc: the opener thread).  The probe: a listening run's
    denial is in the log."""
    secret = str(data / "secret")
    with audit_on():
        heard = landlock_records(lambda: run("--", "cat", secret))
        quiet = landlock_records(lambda: run("-q", "--", "cat", secret))
        opener = landlock_records(lambda: run("-q", "-r", "/proc", "--", "cat", secret))
    assert [t for t in heard if secret in t[1]], heard
    assert not [t for t in quiet if secret in t[1]], quiet
    assert not [t for t in opener if secret in t[1]], opener


def test_python_result_carries_the_denied_access(data):
    """The same, through the library: Result.denied_access with
    Sandbox(audit_denials=True); None when not asked for or on success."""
    import sandlock
    sys_ro = [SYS_RO[i + 1] for i in range(0, len(SYS_RO), 2)]
    asked = sandlock.Sandbox(fs_readable=sys_ro, audit_denials=True, timeout=60)
    plain = sandlock.Sandbox(fs_readable=sys_ro, timeout=60)
    granted = sandlock.Sandbox(fs_readable=sys_ro + [str(data)], audit_denials=True, timeout=60)
    script = "cat \"$(printf '%s/%s' " + str(data) + " secret)\""
    with audit_on():
        r = asked.run(["/bin/sh", "-c", script])
        p = plain.run(["/bin/sh", "-c", script])
        ok = granted.run(["/bin/sh", "-c", script])
    assert not r.success and r.denied_access == ("fs.read_file", str(data / "secret")), r
    assert not p.success and p.denied_access is None
    assert ok.success and ok.stdout == b"secret\n" and ok.denied_access is None
    assert asked.audit_denials is True and "audit_denials=True" in repr(asked)
