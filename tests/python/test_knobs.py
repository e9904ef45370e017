"""Sandbox knobs from Python and the CLI: limits, process settings, extra
syscall denials, protections, confine(), `sandlock check`.  Each is
checked by what the sandboxed program reports, against a control run."""
import errno
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import PY, REPO, SYSTEM, asan_host
import sandlock
from sandlock import Protection, ProtectionStatus
from sandlock.handler import Handler, NotifAction

BUILD = Path(os.environ.get("SANDLOCK_BUILD") or Path(REPO) / "build")
CLI = str(BUILD / "sandlock")
SYS_RO = [a for d in SYSTEM if os.path.exists(d) for a in ("-r", d)]
SYSPROC = SYSTEM + ["/proc"]


def py_out(sb, code):
    r = sb.run([PY, "-c", textwrap.dedent(code)])
    assert r.success, r.stderr
    return r.stdout.decode()


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------- limits

FORK_MANY = """
import os
r, w = os.pipe(); n = 0
for i in range(80):
    try: pid = os.fork()
    except OSError: break
    if pid == 0:
        os.close(w); os.read(r, 1); os._exit(0)
    n += 1
os.close(w)
for _ in range(n): os.wait()
print(n)
"""


def test_max_processes_defaults_to_64():
    assert sandlock.Sandbox(fs_readable=SYSTEM).max_processes == 64
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), FORK_MANY) == "63\n"
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM, max_processes=None), FORK_MANY) == "80\n"
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM, max_processes=5), FORK_MANY) == "4\n"


def test_cli_max_processes_default_and_zero():
    code = textwrap.dedent(FORK_MANY)
    assert cli("run", *SYS_RO, "--", PY, "-c", code).stdout == "63\n"
    assert cli("run", *SYS_RO, "-P", "0", "--", PY, "-c", code).stdout == "80\n"


NOFILE = """
import resource
print(*resource.getrlimit(resource.RLIMIT_NOFILE))
"""


def test_max_open_files():
    own_soft, own_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    sb = sandlock.Sandbox(fs_readable=SYSTEM, max_open_files=40)
    assert py_out(sb, NOFILE) == "40 40\n"
    # clamped to what we have ourselves
    sb = sandlock.Sandbox(fs_readable=SYSTEM, max_open_files=own_soft * 4)
    assert py_out(sb, NOFILE) == "%d %d\n" % (own_soft, own_soft)
    # control
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), NOFILE) == "%d %d\n" % (own_soft, own_hard)
    assert cli("run", *SYS_RO, "--max-open-files", "33", "--", PY, "-c",
               textwrap.dedent(NOFILE)).stdout == "33 33\n"
    for bad in (0, -1, True, "8"):
        with pytest.raises((TypeError, ValueError)):
            sandlock.Sandbox(max_open_files=bad)


def test_cpu_cores():
    last = max(os.sched_getaffinity(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM, cpu_cores=[last]), code) == "[%d]\n" % last
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), code) == \
        "%s\n" % sorted(os.sched_getaffinity(0))
    assert cli("run", *SYS_RO, "--cpu-cores", str(last), "--", PY, "-c", code).stdout == \
        "[%d]\n" % last
    r = cli("run", *SYS_RO, "--cpu-cores", "0-x", "--", "/bin/true")
    assert r.returncode == 125 and "--cpu-cores" in r.stderr
    for bad in ([], [-1], [1024], "0", [True]):
        with pytest.raises((TypeError, ValueError)):
            sandlock.Sandbox(cpu_cores=bad)


def _report():
    return sandlock._knobs.check_report()


CGROUP_PATH = """
import sys
for l in open('/proc/self/cgroup'):
    n, ctl, path = l.strip().split(':', 2)
    if sys.argv[1] in ctl.split(','): print(path)
"""


def guest_group(sb, ctl):
    r = sb.run([PY, "-c", CGROUP_PATH, ctl])
    assert r.success, r.stderr
    return r.stdout.decode().strip()


def test_max_cpu_validation():
    for bad in (0, 101, 2.5):
        with pytest.raises((TypeError, ValueError)):
            sandlock.Sandbox(max_cpu=bad)


def test_max_cpu_uses_a_cgroup_quota():
    if "max_cpu                      available (cgroup)" not in _report():
        pytest.skip("no cgroup with the cpu controller can be made here")
    path = guest_group(sandlock.Sandbox(fs_readable=SYSPROC, max_cpu=30), "cpu")
    assert "/sandlock-" in path
    assert not os.path.exists("/sys/fs/cgroup/cpu" + path)  # removed after the run
    assert "/sandlock-" not in guest_group(sandlock.Sandbox(fs_readable=SYSPROC), "cpu")
    r = cli("run", *SYS_RO, "-r", "/proc", "--max-cpu", "30", "--", PY, "-c", CGROUP_PATH, "cpu")
    assert "/sandlock-" in r.stdout, r.stderr


BUSY_SHARE = """
import sys, time
t0, c0 = time.monotonic(), time.process_time()
while time.monotonic() - t0 < float(sys.argv[1]): pass
print('%.3f' % ((time.process_time() - c0) / (time.monotonic() - t0)))
"""


def _as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_max_cpu_without_a_cgroup_is_a_supervisor_throttle():
    # An unprivileged caller can make no cgroup here: the supervisor stops
    # and continues the sandbox instead.  The guest measures its own share.
    pre = _as_nobody if os.getuid() == 0 else None
    rep = subprocess.run([CLI, "check"], capture_output=True, text=True, timeout=60,
                         preexec_fn=pre).stdout
    if "max_cpu                      available (cgroup)" in rep:
        pytest.skip("this user can make a cpu cgroup: no throttle needed")
    assert "supervisor throttle" in rep, rep
    run = [CLI, "run", *SYS_RO, "--", PY, "-c", BUSY_SHARE, "1.5"]
    r = subprocess.run(run[:2 + len(SYS_RO)] + ["--max-cpu", "20"] + run[2 + len(SYS_RO):],
                       capture_output=True, text=True, timeout=60, preexec_fn=pre)
    assert r.returncode == 0, r.stderr
    share = float(r.stdout)
    assert 0.05 < share < 0.45, share  # about 20% of one core, never stopped for good


def test_max_cpu_throttle_on_a_terminal_leaves_the_caller_running():
    # On a terminal init mirrors the command's job-control stops to the
    # caller (so the shell sees ^Z); the throttle's SIGSTOPs must not be
    # mirrored, or sandlock would stop itself at the first throttle period.
    import pty
    import select
    pre = _as_nobody if os.getuid() == 0 else None
    rep = subprocess.run([CLI, "check"], capture_output=True, text=True, timeout=60,
                         preexec_fn=pre).stdout
    if "supervisor throttle" not in rep:
        pytest.skip("this user gets a cpu cgroup: no throttle")
    pid, fd = pty.fork()
    if pid == 0:
        try:
            if pre:
                pre()
            os.execv(CLI, [CLI, "run", *SYS_RO, "--max-cpu", "20", "--", PY, "-c",
                           BUSY_SHARE, "1.0"])
        finally:
            os._exit(127)
    out, status, deadline = b"", None, time.monotonic() + 30
    try:
        while status is None:
            assert time.monotonic() < deadline, "no exit within 30 s: %r" % out
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    out += os.read(fd, 4096)
                except OSError:  # EIO: the terminal's last writer is gone
                    pass
            p, st = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
            if p:
                assert not os.WIFSTOPPED(st), "sandlock stopped itself (signal %d)" % \
                    os.WSTOPSIG(st)
                status = os.waitstatus_to_exitcode(st)
        while select.select([fd], [], [], 0.2)[0]:  # what is left on the terminal
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            out += data
    finally:
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
    assert status == 0, out
    assert 0.05 < float(out.split()[-1]) < 0.45, out


HOG = """
a = bytearray(48 << 20)
for i in range(0, len(a), 4096): a[i] = 1
print('up', flush=True)
while True: pass
"""


def test_cpu_pct_and_memory_bytes_while_it_runs():
    sb = sandlock.Sandbox(fs_readable=SYSTEM, max_cpu=30)
    with sb.popen([PY, "-c", HOG], stdout=sandlock.StdioMode.PIPED) as p:
        assert p.stdout.readline() == b"up\n"
        p.cpu_pct()  # measure from here
        time.sleep(1)
        pct = p.cpu_pct()
        assert 5 < pct < 60, pct  # held near 30% of one core
        assert (48 << 20) <= p.memory_bytes() < (1 << 30)
        p.kill()
        p.wait()
        with pytest.raises(RuntimeError, match="not running"):
            p.cpu_pct()
    # the same on the Sandbox, for its spawn()ed command, under usage():
    # cpu_pct() / memory_bytes() there are the reference's config helpers
    sb = sandlock.Sandbox(fs_readable=SYSTEM)
    with pytest.raises(RuntimeError, match="not running"):
        sb.usage()
    assert sb.cpu_pct() is None and sb.memory_bytes() is None
    sb.spawn([PY, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        u = sb.usage()
        assert u.cpu_pct > 5 and u.memory_bytes > 1 << 20
    finally:
        sb.kill()
        sb.wait()
    with pytest.raises(RuntimeError):
        sb.usage()


def test_memory_bytes_and_cpu_pct_are_the_references_config_helpers():
    sb = sandlock.Sandbox(max_memory="512M", max_cpu=50)
    assert sb.memory_bytes() == 512 << 20 and sb.cpu_pct() == 50
    assert sb.max_memory == "512M"  # read back as given
    assert sandlock.Sandbox(max_memory=4096).memory_bytes() == 4096


TWO_ALLOCS = """
import os
a = bytearray(48 << 20)
for i in range(0, len(a), 4096): a[i] = 1
pid = os.fork()
if pid == 0:
    b = bytearray(48 << 20)
    for i in range(0, len(b), 4096): b[i] = 1
    os._exit(0)
_, st = os.waitpid(pid, 0)
print('child', 'ok' if st == 0 else 'died')
"""


def test_max_memory_is_a_budget_for_the_whole_tree():
    if "whole sandbox (cgroup)" not in _report():
        pytest.skip("no memory cgroup here: max_memory is RLIMIT_AS per process")
    path = guest_group(sandlock.Sandbox(fs_readable=SYSPROC, max_memory="64M"), "memory")
    assert "/sandlock-" in path
    r = sandlock.Sandbox(fs_readable=SYSTEM, max_memory="64M").run([PY, "-c", TWO_ALLOCS])
    assert b"child ok" not in r.stdout  # together they exceed it: someone is OOM-killed
    r = sandlock.Sandbox(fs_readable=SYSTEM, max_memory="0.5G").run([PY, "-c", TWO_ALLOCS])
    assert r.stdout == b"child ok\n", r.stderr


ESCAPE_GROUP = """
import sys
p = [l.strip().split(':', 2)[2] for l in open('/proc/self/cgroup')
     if 'memory' in l.split(':')[1].split(',')][0]
parent = '/sys/fs/cgroup/memory' + p.rsplit('/', 1)[0]
try:
    with open(parent + '/cgroup.procs', 'w') as f: f.write('0')
    print('escaped')
except OSError as e: print('errno', e.errno)
"""


def test_guest_cannot_leave_its_memory_group():
    if "v1 memory (writable)         yes" not in _report() or \
            "whole sandbox (cgroup)" not in _report():
        pytest.skip("no v1 memory group here")
    sb = sandlock.Sandbox(fs_readable=SYSPROC + ["/sys/fs/cgroup"], max_memory="256M")
    r = sb.run([PY, "-c", ESCAPE_GROUP])
    assert r.stdout == b"errno %d\n" % errno.EACCES, r.stderr  # Landlock: read-only
    # control: outside a sandbox the same write (into the group it already is in) works
    probe = ESCAPE_GROUP.replace("rsplit('/', 1)[0]", "rstrip('/')")
    r = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.stdout == "escaped\n", r.stderr


def test_parse_memory_size():
    p = sandlock.parse_memory_size
    assert p("1.5G") == 3 << 29
    assert p("512M") == 512 << 20 and p("64k") == 64 << 10 and p("2MiB") == 2 << 20
    assert p(4096) == 4096 and p("4096") == 4096
    assert sandlock.Sandbox(max_memory="1.5G").memory_bytes() == 3 << 29
    for bad in ("", "1.5.5G", "-1", "1X", "0", "lots", "1\0G"):
        with pytest.raises(ValueError):
            p(bad)
    for bad in (True, 1.5, None):
        with pytest.raises(TypeError):
            p(bad)


# ---------------------------------------------------------------- process settings

def test_no_coredump():
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_CORE))"
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM, no_coredump=True), code) == "0 0\n"
    assert cli("run", *SYS_RO, "--no-coredump", "--", PY, "-c", code).stdout == "0 0\n"
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), code) == "%d %d\n" % (soft, hard)


def test_no_huge_pages():
    code = "import ctypes; print(ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))"  # PR_GET_THP_DISABLE
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM, no_huge_pages=True), code) == "1\n"
    assert cli("run", *SYS_RO, "--no-huge-pages", "--", PY, "-c", code).stdout == "1\n"
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), code) == "0\n"


def test_no_randomize_memory():
    code = "print(open('/proc/self/personality').read().strip())"
    assert py_out(sandlock.Sandbox(fs_readable=SYSPROC, no_randomize_memory=True), code) == \
        "00040000\n"
    assert cli("run", *SYS_RO, "-r", "/proc", "--no-randomize-memory", "--", PY, "-c",
               code).stdout == "00040000\n"
    assert py_out(sandlock.Sandbox(fs_readable=SYSPROC), code) == "00000000\n"
    with pytest.raises(TypeError):
        sandlock.Sandbox(no_randomize_memory=1)


# ---------------------------------------------------------------- syscalls

UNAME = """
import os
try: os.uname(); print('ok')
except OSError as e: print('errno', e.errno)
"""


def test_extra_deny_syscalls():
    assert py_out(sandlock.Sandbox(fs_readable=SYSTEM), UNAME) == "ok\n"
    sb = sandlock.Sandbox(fs_readable=SYSTEM, extra_deny_syscalls=["uname"])
    assert py_out(sb, UNAME) == "errno %d\n" % errno.EPERM
    r = cli("run", *SYS_RO, "--extra-deny-syscalls", "uname,sysv_ipc", "--", PY, "-c",
            textwrap.dedent(UNAME))
    assert r.stdout == "errno %d\n" % errno.EPERM, r.stderr
    with pytest.raises(sandlock.SandlockError, match="no_such_syscall"):
        sandlock.Sandbox(extra_deny_syscalls=["no_such_syscall"])
    with pytest.raises(TypeError):
        sandlock.Sandbox(extra_deny_syscalls="uname")
    r = cli("run", *SYS_RO, "--extra-deny-syscalls", "nope", "--", "/bin/true")
    assert r.returncode == 125 and "nope" in r.stderr


def test_handler_on_extra_denied_syscall_is_refused():
    class H(Handler):
        def handle(self, ctx):
            return NotifAction.continue_()

    sb = sandlock.Sandbox(fs_readable=SYSTEM, extra_deny_syscalls=["uname"])
    with pytest.raises(sandlock.SandlockError, match="uname"):
        sb.run_with_handlers(["/bin/uname"], [("uname", H())])


# ---------------------------------------------------------------- protections

def test_protection_enum_and_min_abi():
    assert sandlock.min_landlock_abi() == 6
    assert [p.name for p in Protection] == [
        "FS_REFER", "FS_TRUNCATE", "NET_TCP", "FS_IOCTL_DEV", "SIGNAL_SCOPE",
        "ABSTRACT_UNIX_SOCKET_SCOPE"]
    assert Protection.NET_TCP.min_abi == 4 and Protection.SIGNAL_SCOPE.min_abi == 6
    assert max(p.min_abi for p in Protection) == sandlock.min_landlock_abi()


def test_active_protections_and_disable():
    if sandlock.landlock_abi_version() < 6:
        pytest.skip("needs Landlock ABI 6")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, disable=[Protection.NET_TCP],
                          allow_degraded=[Protection.SIGNAL_SCOPE])
    st = sb.active_protections()
    assert st[Protection.NET_TCP] is ProtectionStatus.DISABLED
    assert st[Protection.SIGNAL_SCOPE] is ProtectionStatus.ACTIVE  # the kernel has it
    assert st[Protection.FS_REFER] is ProtectionStatus.ACTIVE
    with pytest.raises(ValueError):
        sandlock.Sandbox(disable=["no_such_protection"])
    with pytest.raises(ValueError):
        sandlock.Sandbox(allow_degraded=[17])


CONNECT = """
import socket, sys
s = socket.socket()
try: s.connect(('127.0.0.1', int(sys.argv[1]))); print('ok')
except OSError as e: print('errno', e.errno)
"""


def test_disable_net_tcp_lets_tcp_through():
    if sandlock.landlock_abi_version() < 4:
        pytest.skip("needs Landlock ABI 4")
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = str(srv.getsockname()[1])
    try:
        r = sandlock.Sandbox(fs_readable=SYSTEM).run([PY, "-c", CONNECT, port])
        assert r.stdout == b"errno %d\n" % errno.EACCES  # control: denied by default
        r = sandlock.Sandbox(fs_readable=SYSTEM, disable=[Protection.NET_TCP]).run(
            [PY, "-c", CONNECT, port])
        assert r.stdout == b"ok\n"
        r = cli("run", *SYS_RO, "--disable", "net-tcp", "--", PY, "-c", CONNECT, port)
        assert r.stdout == "ok\n", r.stderr
    finally:
        srv.close()


# The strict default itself (refusal below a protection's ABI) needs the
# library's ABI cap test hook, which the shared library does not export:
# tests/c/test_knobs.c strict_default_refuses_a_missing_protection.
def test_cli_allow_degraded_accepts_every_protection_name():
    for p in Protection:
        for spelled in (p.name.lower(), p.name.lower().replace("_", "-")):
            r = cli("run", *SYS_RO, "--allow-degraded", spelled, "--", "/bin/true")
            assert r.returncode == 0, (spelled, r.stderr)
    r = cli("run", *SYS_RO, "--allow-degraded", "bogus", "--", "/bin/true")
    assert r.returncode == 125 and "unknown protection" in r.stderr


# ---------------------------------------------------------------- confine

CONFINE_CHILD = """
import errno, os, sys
sys.path.insert(0, %(pkg)r)
import sandlock
pub, sec = sys.argv[1], sys.argv[2]
sandlock.confine(sandlock.Sandbox(fs_readable=%(sys)r + [pub]))
out = []
os.listdir(pub); out.append('pub ok')
try: open(sec).read(); out.append('secret READ')
except PermissionError: out.append('secret denied')
try: os.uname(); out.append('uname ok')
except OSError: out.append('uname denied')
print(', '.join(out))
"""


def test_confine_in_a_subprocess(tmpdir_path):
    pub = os.path.join(tmpdir_path, "pub")
    sec = os.path.join(tmpdir_path, "secret")
    os.mkdir(pub)
    with open(sec, "w") as f:
        f.write("s")
    code = CONFINE_CHILD % {"pkg": os.path.join(REPO, "python"), "sys": SYSTEM}
    r = subprocess.run([PY, "-c", code, pub, sec], capture_output=True, text=True, timeout=60,
                       env=asan_host(dict(os.environ)))
    assert r.stdout == "pub ok, secret denied, uname ok\n", r.stderr
    # control: the same script without the confine line reads the secret
    ctl = code.replace("sandlock.confine(", "(")
    r = subprocess.run([PY, "-c", ctl, pub, sec], capture_output=True, text=True, timeout=60,
                       env=asan_host(dict(os.environ)))
    assert "secret READ" in r.stdout, r.stderr


def test_confine_applies_extra_denies_and_refuses_supervisor_settings(tmpdir_path):
    code = textwrap.dedent("""
        import os, sys
        sys.path.insert(0, %r)
        import sandlock
        for kw in ({'cwd': '/tmp'}, {'max_memory': '1G'}, {'max_processes': 3},
                   {'timeout': 5}, {'env': {'A': '1'}}, {'max_cpu': 10}, {'num_cpus': 2},
                   {'deterministic_dirs': True}, {'port_remap': True},
                   {'policy_fn': lambda ev, ctx: 0}, {'random_seed': 1}, {'time_start': 0},
                   {'name': 'x'}, {'net_allow': ['127.0.0.1:80']},
                   {'net_allow': ['udp://*:53']}):
            try:
                sandlock.confine(sandlock.Sandbox(fs_readable=%r, **kw))
                print('accepted', kw)
            except ValueError as e:
                assert list(kw)[0] in str(e), e
        sandlock.confine(sandlock.Sandbox(fs_readable=%r, extra_deny_syscalls=['uname']))
        try: os.uname(); print('uname ok')
        except OSError as e: print('uname errno', e.errno)
    """) % (os.path.join(REPO, "python"), SYSTEM, SYSTEM)
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60,
                       env=asan_host(dict(os.environ)))
    assert r.stdout == "uname errno %d\n" % errno.EPERM, r.stderr
    with pytest.raises(TypeError):
        sandlock.confine("not a sandbox")


# ---------------------------------------------------------------- check

def test_sandlock_check():
    r = cli("check")
    assert r.returncode == 0, r.stderr
    assert "Landlock ABI: %d" % sandlock.landlock_abi_version() in r.stdout
    for word in ("signal_scope", "user notification", "SYNC_WAKE_UP", "ADDFD", "v2 group",
                 "Yama ptrace_scope", "max_memory"):
        assert word in r.stdout
    assert cli("check", "extra").returncode == 125
    assert "check" in cli("--help").stdout


MEMFD_GROW = """
import os
fd = os.memfd_create('grow')
chunk = b'x' * (1 << 20)
done = 0
try:
    for _ in range(256):
        os.write(fd, chunk)
        done += 1
except OSError as e:
    print('error', e.errno)
print('wrote', done)
"""


def test_memfd_growth_is_held_to_max_memory():
    """Issue 6 item 12: memfd pages count against the sandbox's budget (the
    cgroup's memory limit), so 256 MiB in a memfd cannot be held under 64M."""
    if "whole sandbox (cgroup)" not in _report():
        pytest.skip("no memory cgroup here: memfd pages are not covered by RLIMIT_AS")
    free = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run([PY, "-c", MEMFD_GROW])
    assert free.stdout.endswith(b"wrote 256\n")  # the probe works unlimited
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60, max_memory="64M").run(
        [PY, "-c", MEMFD_GROW])
    assert not r.stdout.endswith(b"wrote 256\n")
    assert r.reason is sandlock.ExitReason.KILLED or b"error" in r.stdout, (r.stdout, r.reason)


ASYNC_LOAD = """
import os, threading
bad = []
def work():
    for _ in range(2000):
        try:
            os.close(os.open('/etc/hostname', os.O_RDONLY))
        except OSError as e:
            bad.append(e.errno)
ts = [threading.Thread(target=work) for _ in range(16)]
for t in ts: t.start()
for t in ts: t.join()
print(len(bad), sorted(set(bad)))
"""


def test_async_handler_under_load_never_gets_spurious_eagain():
    """Issue 8: 16 guest threads hammering openat through an async handler
    (at most 16 calls waiting, cap 64) must never see EAGAIN."""
    class Pass(Handler):
        async def handle(self, ctx):
            return NotifAction.continue_()

    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=120)
    r = sb.run_with_handlers([PY, "-c", ASYNC_LOAD], [("openat", Pass())])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == b"0 []\n"
