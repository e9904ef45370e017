"""The containment switches as the Python API and the CLI expose them:
``extra_allow_syscalls`` / ``--extra-allow-syscalls`` and the default
denials a Python program meets (SysV IPC, UDP sockets).

The hostile probes themselves are in tests/c/test_containment.c; here a
real guest (build/helpers/contain, python3) posts to a SysV message queue
this test created, which is the host's IPC namespace."""
import ctypes
import os
import subprocess
from pathlib import Path

import pytest

import sandlock

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
HELPER = str(BUILD / "helpers" / "contain")
SANDLOCK = str(BUILD / "sandlock")
RO = ["/usr", "/etc", str(BUILD / "helpers")]
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]

IPC_PRIVATE, IPC_CREAT, IPC_NOWAIT, IPC_RMID = 0, 0o1000, 0o4000, 0

_libc = ctypes.CDLL(None, use_errno=True)


class _Msg(ctypes.Structure):
    _fields_ = [("type", ctypes.c_long), ("text", ctypes.c_char * 8)]


@pytest.fixture
def queue():
    """A SysV message queue of ours (outside any sandbox)."""
    qid = _libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)
    assert qid >= 0, os.strerror(ctypes.get_errno())
    try:
        yield qid
    finally:
        _libc.msgctl(qid, IPC_RMID, None)


def _take(qid):
    """The text of the next message on the queue, or None (drains one)."""
    m = _Msg()
    n = _libc.msgrcv(qid, ctypes.byref(m), 8, 0, IPC_NOWAIT)
    return m.text if n >= 0 else None


def test_sysv_ipc_denied_by_default_and_allowed_by_group(queue):
    r = sandlock.Sandbox(fs_readable=RO).run([HELPER, "msg", str(queue)])
    assert r.stdout == b"errno=EPERM\n"
    assert _take(queue) is None
    sb = sandlock.Sandbox(fs_readable=RO, extra_allow_syscalls=["sysv_ipc"])
    assert sb.extra_allow_syscalls == ["sysv_ipc"]
    r = sb.run([HELPER, "msg", str(queue)])
    assert r.stdout == b"ok\n"
    assert _take(queue) == b"guest"


@pytest.mark.parametrize("names, why", [
    (["shmget"], "'shmget' is a single syscall"),
    (["sysv_ipc", "ipc"], "unknown syscall group 'ipc'"),
])
def test_extra_allow_syscalls_rejects_bad_names(names, why):
    with pytest.raises(sandlock.SandlockError) as e:
        sandlock.Sandbox(fs_readable=RO, extra_allow_syscalls=names)
    assert e.value.code_name == "INVALID"
    assert why in e.value.message


@pytest.mark.parametrize("value, exc", [
    ("sysv_ipc", TypeError), ([1], TypeError), ([""], ValueError), (None, TypeError),
])
def test_extra_allow_syscalls_argument_types(value, exc):
    with pytest.raises(exc):
        sandlock.Sandbox(fs_readable=RO, extra_allow_syscalls=value)


def _cli(*args):
    return subprocess.run([SANDLOCK, "run", *args], capture_output=True, text=True, timeout=60)


def test_cli_extra_allow_syscalls(queue):
    ro = [a for d in RO for a in ("-r", d)]
    r = _cli(*ro, "--", HELPER, "msg", str(queue))
    assert r.stdout == "errno=EPERM\n"
    assert _take(queue) is None
    r = _cli(*ro, "--extra-allow-syscalls", "sysv_ipc", "--", HELPER, "msg", str(queue))
    assert r.stdout == "ok\n", r.stderr
    assert _take(queue) == b"guest"
    # comma-separated: every name is checked
    r = _cli(*ro, "--extra-allow-syscalls", "sysv_ipc,msgsnd", "--", HELPER, "msg", str(queue))
    assert r.returncode == 125
    assert "'msgsnd' is a single syscall" in r.stderr
    assert _take(queue) is None
    r = _cli(*ro, "--extra-allow-syscalls", "sysv_ipc,", "--", "/bin/true")
    assert r.returncode == 125
    assert "--extra-allow-syscalls" in r.stderr


def test_cli_help_lists_extra_allow_syscalls():
    r = subprocess.run([SANDLOCK, "run", "--help"], capture_output=True, text=True)
    assert "--extra-allow-syscalls GROUP" in r.stdout
    assert "sysv_ipc" in r.stdout


def test_python_guest_cannot_open_udp_socket():
    """What a program sees: UDP is refused at socket creation, TCP is not."""
    code = ("import socket\n"
            "socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n"
            "try:\n"
            "    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "    print('udp open')\n"
            "except PermissionError as e:\n"
            "    print('udp', e.errno)\n")
    r = sandlock.Sandbox(fs_readable=SYS_RO).run(["/usr/bin/python3", "-c", code])
    assert r.stdout == b"udp 1\n", r.stderr
