"""`sandlock run --trace` (a JSON line per file access the rules refuse,
with the flag that allows it) and `sandlock learn` (a profile for exactly
what a command used), on real commands."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from sandlock import _native
from test_cli import SANDLOCK, SYS_RO, run_in_sandbox, sandlock, tmpdir_path  # noqa: F401


def trace_lines(stderr):
    out = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.fixture
def tree(tmpdir_path):
    data = tmpdir_path / "data"
    out = tmpdir_path / "out"
    data.mkdir()
    out.mkdir()
    (data / "x").write_text("secret\n")
    return tmpdir_path


def test_trace_reports_denied_read_and_write_with_the_flag(tree):
    data, out = tree / "data", tree / "out"
    r = run_in_sandbox("-w", str(out), "--trace", "--", "/bin/sh", "-c",
                       f"cat {data}/x; echo hi > {data}/new; echo ok > {out}/f; "
                       "cat /nonexistent-sandlock-trace; true")
    assert "secret" not in r.stdout  # the sandbox really denied it
    lines = trace_lines(r.stderr)
    by_path = {l["path"]: l for l in lines}
    read = by_path[f"{data}/x"]
    assert read["event"] == "denied" and read["syscall"] == "openat"
    assert read["access"] == "read" and read["reason"] == "not under any -r/-w"
    assert read["allow_flag"] == "-r" and read["allow_path"] == str(data)
    assert read["message"] == (f"denied openat {data}/x (read): not under any -r/-w; "
                               f"allow with -r {data}")
    write = by_path[f"{data}/new"]
    assert write["access"] == "write" and write["allow_flag"] == "-w"
    assert write["allow_path"] == str(data)
    # allowed accesses and missing files are not denials
    assert f"{out}/f" not in by_path
    assert not any("nonexistent" in p for p in by_path)
    assert (out / "f").read_text() == "ok\n"


def test_trace_reports_refused_mkdir_unlink_rename_and_symlink(tree):
    """Names made, removed or renamed where no -w allows it: each refusal
    reported with the -w that allows it; allowed ones and ENOENT/EEXIST
    are not denials."""
    data, out = tree / "data", tree / "out"
    script = (f"mkdir {data}/d; rm -f {data}/x; mv {data}/x {data}/y; "
              f"ln -s x {data}/l; mkdir {out}/ok; rm {out}/nothing-here; "
              f"mkdir {data}; true")
    r = run_in_sandbox("-r", str(data), "-w", str(out), "--trace", "--", "/bin/sh", "-c",
                       script)
    assert (data / "x").read_text() == "secret\n" and not (data / "d").exists()
    assert (out / "ok").is_dir()
    seen = {(l["syscall"], l["path"]): l for l in trace_lines(r.stderr)}
    for call, path in (("mkdir", data / "d"), ("unlinkat", data / "x"),
                       ("symlink", data / "l")):
        ev = [l for (c, p), l in seen.items() if p == str(path) and c.startswith(call)]
        assert ev, (call, path, sorted(seen))
        assert ev[0]["access"] == "write" and ev[0]["allow_flag"] == "-w"
        assert ev[0]["allow_path"] == str(data)
    assert any(c.startswith("rename") and p in (str(data / "x"), str(data / "y"))
               for c, p in seen), sorted(seen)
    assert not any(p.startswith(str(out)) for _, p in seen)
    assert (r"mkdir", str(data)) not in seen  # EEXIST, not a denial
    # What the trace says to grant lets it happen.
    r = run_in_sandbox("-w", str(data), "--trace", "--", "/bin/sh", "-c",
                       f"mkdir {data}/d && mv {data}/x {data}/y")
    assert r.returncode == 0 and (data / "d").is_dir() and (data / "y").exists()
    assert [l for l in trace_lines(r.stderr) if l["path"].startswith(str(data))] == []


def test_trace_follows_the_suggestion(tree):
    """Granting what the trace suggests makes the access work."""
    data = tree / "data"
    r = run_in_sandbox("--trace", "--", "/bin/cat", f"{data}/x")
    (line,) = [l for l in trace_lines(r.stderr) if l["path"] == f"{data}/x"]
    r = run_in_sandbox(line["allow_flag"], line["allow_path"], "--trace", "--",
                       "/bin/cat", f"{data}/x")
    assert r.returncode == 0 and r.stdout == "secret\n"
    assert trace_lines(r.stderr) == []


def test_trace_reports_deny_paths_and_exec(tree):
    data = tree / "data"
    r = run_in_sandbox("-r", str(data), "-d", str(data / "x"), "--trace", "--",
                       "/bin/cat", str(data / "x"))
    (line,) = [l for l in trace_lines(r.stderr) if l["path"] == f"{data}/x"]
    assert line["reason"] == "inside a -d path" and line["deny_path"] == f"{data}/x"
    assert "allow_flag" not in line
    # executing a program outside every tree, and its interpreter
    script = data / "s.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    r = sandlock("run", "-r", "/usr", "-r", "/lib", "-r", "/lib64", "--trace", "--",
                 str(script))
    assert r.returncode == 126
    (line,) = [l for l in trace_lines(r.stderr) if l["path"] == str(script)]
    assert line["syscall"] == "execve" and line["access"] == "execute"
    assert line["allow_flag"] == "-r" and line["allow_path"] == str(data)


def test_trace_reports_the_interpreter(tree):
    # /bin/sh's dynamic loader lives under /lib or /usr/lib; grant only the
    # binary itself and the loader shows up as the interpreter denial.
    sh = os.path.realpath("/bin/sh")
    r = sandlock("run", "-r", sh, "--trace", "--", sh, "-c", "true")
    assert r.returncode == 126
    lines = trace_lines(r.stderr)
    interp = [l for l in lines if l["syscall"] == "execve (interpreter)"]
    assert interp and "ld-linux" in interp[0]["path"], lines


def test_learn_prints_a_profile_that_runs_the_command(tree):
    data, out = tree / "data", tree / "out"
    cmd = ["/bin/sh", "-c", f"cat {data}/x; echo ok > {out}/g"]
    r = sandlock("learn", "-w", str(out), "--", *cmd)
    assert r.returncode == 0, r.stderr
    assert "secret" in r.stderr and "secret" not in r.stdout  # output on stderr
    prof = tree / "learned.toml"
    prof.write_text(r.stdout)
    import tomllib
    doc = tomllib.loads(r.stdout)
    assert doc["program"] == {"exec": "/bin/sh", "args": cmd[1:]}
    reads = doc["filesystem"]["read"]
    assert f"{data}/x" in reads and str(data) not in reads  # exactly the file
    assert not any(p in ("/", "/usr", "/tmp") for p in reads)
    assert doc["filesystem"]["write"] == [str(out)]
    (out / "g").unlink()
    r = sandlock("run", "--profile-file", str(prof))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "secret\n" and (out / "g").read_text() == "ok\n"
    # and it is no wider than that: another file of the same directory stays denied
    (data / "y").write_text("other\n")
    r = sandlock("run", "--profile-file", str(prof), "--", "/bin/cat", str(data / "y"))
    assert r.returncode != 0 and r.stdout == ""


def test_learn_help_and_errors():
    r = sandlock("learn", "--help")
    assert r.returncode == 0 and "Usage: sandlock learn" in r.stdout
    r = sandlock("learn", "--", "/nonexistent-sandlock-learn")
    assert r.returncode == 127


def test_trace_reports_supervisor_denials(tree):
    data, out = tree / "data", tree / "out"
    (out / "w").write_text("")
    code = ("import os\n"
            f"for p in ({str(data / 'x')!r}, {str(out / 'w')!r}):\n"
            "    try: os.chmod(p, 0o600); print('ok')\n"
            "    except OSError as e: print('err', e.errno)\n")
    r = run_in_sandbox("-r", str(tree), "-w", str(out), "--trace", "--", "/usr/bin/python3",
                       "-c", code)
    assert r.stdout == "err 1\nok\n", r.stderr  # the guard really refused the first
    lines = [l for l in trace_lines(r.stderr) if l.get("by")]
    assert len(lines) == 1, lines
    (line,) = lines
    assert line["by"] == "metadata guard" and line["errno_name"] == "EPERM"
    assert line["syscall"] in ("chmod", "fchmodat", "fchmodat2")
    assert "allow with -w" in line["message"]


# A probe of what the filter refuses by itself (not the supervisor): the
# blocklist (ptrace, keyctl, mount), --extra-deny-syscalls (uname), and the
# argument rules (a personality flag, a user namespace, a packet socket).
# Prints each errno (0: it worked) and the personality afterwards, and fails
# (exit 3).  argv[1]:
# keyctl's number (glibc has no wrapper).
FILTER_PROBE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def call(f, *a):
    r = f(*[ctypes.c_long(x) for x in a])
    return 0 if r >= 0 else ctypes.get_errno()
out = [call(libc.ptrace, 0, 0, 0, 0), call(libc.syscall, int(sys.argv[1]), 0, 0),
       call(libc.mount, 0, 0, 0, 0, 0), call(libc.personality, 0x0040000),
       call(libc.unshare, 0x10000000), call(libc.socket, 17, 3, 0)]
try:
    os.uname(); out.append(0)
except OSError as e:
    out.append(e.errno)
print(*out, libc.personality(0xffffffff))
sys.exit(3)  # a failed run: the end-of-run lines are printed
"""
FILTER_CALLS = {"ptrace": "blocklist", "keyctl": "blocklist", "mount": "blocklist",
                "uname": "--extra-deny-syscalls"}
ARG_CALLS = ("personality", "unshare", "socket")


def test_trace_names_the_filters_own_refusals():
    """--trace reports what the seccomp filter refuses without the
    supervisor (issue 23): which syscall and which rule, with the flag when
    one exists; the calls are refused exactly as without --trace (EPERM,
    the personality unchanged).  Outside the sandbox the probe's ptrace
    and personality calls work (the probe reaches them)."""
    probe = ["/usr/bin/python3", "-c", FILTER_PROBE, str(_native.syscall_nr("keyctl"))]
    outside = subprocess.run(probe, capture_output=True, text=True).stdout.split()
    assert outside[0] == "0" and outside[-1] == str(0x0040000), outside
    plain = run_in_sandbox("--extra-deny-syscalls", "uname", "--", *probe)
    traced = run_in_sandbox("--extra-deny-syscalls", "uname", "--trace", "--", *probe)
    assert plain.stdout == traced.stdout == "1 1 1 1 1 1 1 0\n", (plain, traced)
    assert not [l for l in trace_lines(plain.stderr) if l.get("by")]
    lines = [l for l in trace_lines(traced.stderr) if l.get("by")]
    by_call = {l["syscall"]: l for l in lines}
    for call, rule in FILTER_CALLS.items():
        line = by_call[call]
        assert line["by"] == "syscall filter" and line["rule"] == rule, line
        assert line["errno_name"] == "EPERM"
    assert "--extra-deny-syscalls" in by_call["uname"]["message"]
    for call in ARG_CALLS:
        line = by_call[call]
        assert line["by"] == "argument rules" and line["errno_name"] == "EPERM", line
    assert "personality flag" in by_call["personality"]["rule"]
    assert "namespaces" in by_call["unshare"]["rule"]
    assert "socket family" in by_call["socket"]["rule"]
    # the end-of-run lines count them too (a run without --trace never sees them)
    assert "4 calls refused by the syscall filter (first: " in traced.stderr
    assert "syscall filter" not in plain.stderr


def test_trace_names_the_flag_that_opens_udp():
    code = ("import socket\ntry: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "except OSError as e: print(e.errno)")
    r = run_in_sandbox("--trace", "--", "/usr/bin/python3", "-c", code)
    assert r.stdout == "1\n"
    (line,) = [l for l in trace_lines(r.stderr) if l.get("syscall") == "socket"]
    assert line["rule"] == "UDP and ping sockets"
    assert "--net-allow udp://" in line["message"]


def test_trace_reports_the_process_limit(tree):
    r = run_in_sandbox("-P", "1", "--trace", "--", "/bin/sh", "-c", "/bin/true; echo done")
    lines = [l for l in trace_lines(r.stderr) if l.get("by") == "process count"]
    assert lines and lines[0]["errno_name"] == "EAGAIN", r.stderr
    assert "-P" in lines[0]["message"]


def test_learn_output_merge_and_collapse(tree):
    import tomllib
    data = tree / "data"
    for n in ("a", "b", "c", "d"):
        (data / n).write_text(n)
    cat = ["/bin/cat"] + [str(data / n) for n in ("a", "b", "c", "d")]
    prof = tree / "p.toml"
    # -o: the profile goes to the file, nothing to stdout
    r = sandlock("learn", "-o", str(prof), "--", *cat)
    assert r.returncode == 0 and r.stdout == "", r.stderr
    reads = tomllib.loads(prof.read_text())["filesystem"]["read"]
    assert {str(data / n) for n in "abcd"} <= set(reads) and str(data) not in reads
    # --collapse 4: four entries used in one directory grant the directory
    r = sandlock("learn", "--collapse", "4", "--", *cat)
    reads = tomllib.loads(r.stdout)["filesystem"]["read"]
    assert str(data) in reads and str(data / "a") not in reads
    r = sandlock("learn", "--collapse", "5", "--", *cat)  # fewer than 5: kept apart
    assert str(data) not in tomllib.loads(r.stdout)["filesystem"]["read"]
    # a bare --collapse is the reference's N = 4; --collapse=N works too
    r = sandlock("learn", "--collapse", "--", *cat)
    assert r.returncode == 0, r.stderr
    assert str(data) in tomllib.loads(r.stdout)["filesystem"]["read"]
    r = sandlock("learn", "--collapse=5", "--", *cat)
    assert str(data) not in tomllib.loads(r.stdout)["filesystem"]["read"]
    # --merge: what this run used is added to the profile already there
    (data / "e").write_text("e")
    r = sandlock("learn", "--merge", str(prof), "--", "/bin/cat", str(data / "e"))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    reads = tomllib.loads(prof.read_text())["filesystem"]["read"]
    assert {str(data / n) for n in "abcde"} <= set(reads)
    assert len(reads) == len(set(reads))
    # a --merge profile that does not load is refused before the run
    r = sandlock("learn", "--merge", str(tree / "missing.toml"), "--", "/bin/true")
    assert r.returncode == 125 and "--merge" in r.stderr
    # learn-only options are not run's
    r = sandlock("run", "-o", str(prof), "--", "/bin/true")
    assert r.returncode == 125 and "belongs to 'sandlock learn'" in r.stderr


def test_trace_under_a_workdir_reports_only_real_denials(tree):
    """Reads of the workdir's files succeed (the run reads and stages the
    tree), and a COW answer such as ENOENT for a file the run deleted is
    the call's result: neither is a denial.  A real one still is."""
    work, data = tree / "out", tree / "data"
    (work / "a").write_text("hi\n")
    (work / "gone").write_text("x\n")
    r = subprocess.run([SANDLOCK, "run", *SYS_RO, "--trace", "--workdir", ".", "--dry-run", "--",
                        "/bin/sh", "-c", f"cat a; ls >/dev/null; rm gone; cat gone; echo n > b; "
                        f"cat b; cat {data}/x; true"],
                       cwd=str(work), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "hi\nn\n" in r.stdout and "secret" not in r.stdout
    lines = trace_lines(r.stderr)
    assert [l for l in lines if str(work) in l.get("path", "") or l.get("errno") == 2] == []
    assert [l["path"] for l in lines if l.get("path", "").startswith(str(data))] == [f"{data}/x"]


def test_trace_on_a_terminal_is_in_words(tmp_path):
    """--trace writes JSON lines to a pipe or file, and the messages in
    words to a person at a terminal (stderr a pty)."""
    from test_cli import PtyProcess
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    cmd = [SANDLOCK, "run", "--trace", *SYS_RO, "--", "/bin/cat", str(secret)]
    piped = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert json.loads(piped.stderr.splitlines()[0])["path"] == str(secret)
    with PtyProcess(cmd) as p:
        before = p.expect(("sandlock: trace: denied openat %s (read): " % secret).encode())
        after = p.expect(b"allow with -r ")
        assert p.wait() == 1
    assert b'{"event"' not in before + after + p.buf
