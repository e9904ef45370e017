"""The minimal /dev every sandbox gets (src/launch/devmin.c): null, zero, full,
random, urandom, the files behind its own stdin/stdout/stderr, /dev/fd, and
/dev/tty when its stdio is a terminal; no other device node.  Only the
README's grants are given (-r /usr -r /lib -r /lib64 -r /bin -r /etc)."""
import os
import subprocess

import pytest

from test_cli import PY, SANDLOCK, SYS_RO, PtyProcess, sandlock


def run(script, **kw):
    return sandlock("run", *SYS_RO, "--", "/bin/sh", "-c", script, **kw)


def test_dev_null_and_background_jobs():
    # The first-hour failure: `> /dev/null`, and every `&` job of a sh
    # script (dash opens /dev/null as a background job's stdin).
    r = run("echo hidden > /dev/null; (sleep 0.05; echo job) & wait; echo done")
    assert (r.returncode, r.stdout, r.stderr) == (0, "job\ndone\n", "")


@pytest.mark.parametrize("script,out", [
    # (no pipelines: dash under load may say "Cannot fork", docs/limits.md)
    ("od -An -N4 -tx1 /dev/zero", "00 00 00 00"),
    ("od -An -N2 -tx1 /dev/urandom >/dev/null && echo read", "read"),
    ("od -An -N2 -tx1 /dev/random >/dev/null && echo read", "read"),
    ("wc -c < /dev/null", "0"),
    ("echo x > /dev/full 2>/dev/null; echo $?", "1"),     # opens; the write fails, as on the host
    ("echo to-stdout > /dev/stdout", "to-stdout"),
    ("echo via-fd > /dev/fd/1", "via-fd"),
    ("bash -c 'cat <(echo procsub)'", "procsub"),          # bash's /dev/fd/63
])
def test_data_devices_work(script, out):
    r = run(script)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == out, r.stderr


# Device nodes that exist here and open outside the sandbox (root or not:
# each is checked first), but must stay out of reach inside.
OTHER_DEVICES = ["/dev/kmsg", "/dev/mem", "/dev/port", "/dev/loop0", "/dev/tty0", "/dev/ptmx",
                 "/dev/console", "/dev/snapshot", "/dev/vcs", "/dev/shm"]


@pytest.mark.parametrize("dev", OTHER_DEVICES)
def test_other_devices_stay_denied(dev):
    probe = f"import os; os.close(os.open({dev!r}, os.O_RDONLY | os.O_NONBLOCK)); print('opened')"
    try:
        outside = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=30)
    except OSError:
        outside = None
    if outside is None or outside.stdout != "opened\n":
        pytest.skip(f"{dev} does not open here even outside the sandbox")
    r = sandlock("run", *SYS_RO, "--", PY, "-c", probe)
    assert r.returncode != 0 and "PermissionError" in r.stderr, (r.stdout, r.stderr)


def test_dev_is_not_listable():
    assert os.listdir("/dev")
    r = run("ls /dev")
    assert r.returncode != 0 and "Permission denied" in r.stderr


def test_stdout_file_reopen_grants_only_the_fds_access(tmpdir_path):
    # stdout is a file outside every grant, open for writing only: the
    # guest may reopen it for writing (what `> /dev/stdout` does), never
    # for reading (that would read a file it was not granted).
    out = os.path.join(tmpdir_path, "out.txt")
    with open(out, "w") as f:
        f.write("secret-before\n")
    code = ("import sys\n"
            "open('/dev/stdout', 'a').write('appended\\n')\n"
            "try:\n    open('/dev/stdout').read(); print('READ', file=sys.stderr)\n"
            "except PermissionError:\n    print('read-denied', file=sys.stderr)\n")
    with open(out, "a") as f:
        r = subprocess.run([str(SANDLOCK), "run", *SYS_RO, "--", PY, "-c", code],
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "read-denied\n"
    assert open(out).read() == "secret-before\nappended\n"


def test_tty_of_its_own_terminal():
    # In a terminal: /dev/tty and the terminal's own /dev/pts/N open.
    script = "exec 3<>/dev/tty && echo tty-ok; tty; exec 4<>$(tty) && echo pts-ok"
    with PtyProcess([SANDLOCK, "run", *SYS_RO, "--", "/bin/sh", "-c", script]) as p:
        p.expect(b"tty-ok\r\n")
        assert p.expect(b"\r\n").startswith(b"/dev/pts/")
        p.expect(b"pts-ok\r\n")
        assert p.wait() == 0


def test_no_tty_when_stdio_is_not_a_terminal(tmpdir_path):
    # The caller has a controlling terminal, but the sandbox's stdio is not
    # it (output captured to a file): /dev/tty would let the guest read
    # what is typed at the caller's terminal, so it stays denied.  The same
    # open works outside first.  (-q: the log is the guest's output alone.)
    log = os.path.join(tmpdir_path, "log")
    probe = "exec 3<>/dev/tty && echo opened || echo denied"
    cmd = (f"/bin/sh -c '{probe}' </dev/null >{log}.outside 2>&1; "
           f"{SANDLOCK} run -q {' '.join(SYS_RO)} -- /bin/sh -c '{probe}' </dev/null >{log} 2>&1; "
           "echo finished")
    with PtyProcess(["/bin/sh", "-c", cmd]) as p:
        p.expect(b"finished\r\n")
        assert p.wait() == 0
    assert open(log + ".outside").read() == "opened\n"
    assert open(log).read().endswith("denied\n")


def test_default_devices_agree_with_the_header():
    import re
    from pathlib import Path
    from sandlock._trace import DEFAULT_DEVICES
    h = (Path(__file__).resolve().parents[2] / "include" / "sandlock.h").read_text()
    m = re.search(r"#define SANDLOCK_DEFAULT_DEVICES \\\n(.*)\n", h)
    assert tuple(re.findall(r'"([^"]+)"', m.group(1))) == DEFAULT_DEVICES


def test_trace_and_learn_on_dev(tmpdir_path):
    # --trace: the default devices are no denial; another device's grant
    # names the device itself (-w /dev/loop0), never all of /dev.
    r = sandlock("run", "--trace", *SYS_RO, "--", "/bin/sh", "-c",
                 "echo > /dev/null; echo > /dev/loop0; true")
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("{")]
    assert len(lines) == 1 and '"path":"/dev/loop0"' in lines[0], r.stderr
    assert "allow with -w /dev/loop0" in lines[0]
    # learn keeps what it saw used under /dev (a profile without it would
    # fail the same way) and leaves out what needs no grant.
    r = sandlock("learn", "-r", "/usr", "--", "/bin/sh", "-c",
                 f"echo > /dev/null; head -c1 /dev/zero > /dev/null; echo hi > /dev/shm/{os.path.basename(tmpdir_path)}; true")
    try:
        assert 'write = ["/dev/shm"]' in r.stdout, r.stdout
        grants = r.stdout.split("[filesystem]")[1]
        assert "/dev/null" not in grants and "/dev/zero" not in grants
    finally:
        try:
            os.unlink(f"/dev/shm/{os.path.basename(tmpdir_path)}")
        except FileNotFoundError:
            pass


def test_python_api_gets_the_same_dev():
    import sandlock
    from conftest import SYSTEM
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run(
        ["/bin/sh", "-c", "echo x > /dev/null; (echo job) & wait; od -An -N1 -tx1 /dev/zero"])
    assert (r.exit_code, r.stdout, r.stderr) == (0, b"job\n 00\n", b"")


def test_help_and_readme_say_so():
    # The issue asked that `--help` and the README tell the user: every
    # default device (the header's list) is named in both.
    import re
    from pathlib import Path
    from sandlock._trace import DEFAULT_DEVICES
    r = sandlock("run", "--help")
    text = re.sub(r"\s+", " ", r.stdout + r.stderr)
    readme = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[2] / "README.md").read_text())
    for dev in DEFAULT_DEVICES + ("/dev/tty",):
        assert dev in text, dev
        assert "`" + dev.split("/")[-1] + "`" in readme or dev in readme, dev
    assert "no other device" in text and "no other device" in readme
