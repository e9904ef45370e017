"""[syscalls] extra_allow in profiles (CLI and Python): the group really is
re-allowed (a guest posts to a SysV queue of ours), and refused without it."""
import os
import subprocess

import pytest

import sandlock
from sandlock.profile import ProfileError
from test_containment import HELPER, RO, SANDLOCK, _take, queue  # noqa: F401


def _profile(tmp_path, extra):
    p = tmp_path / "ipc.toml"
    reads = ", ".join(f'"{d}"' for d in RO)
    p.write_text(f"[filesystem]\nread = [{reads}]\n[syscalls]\nextra_allow = {extra}\n")
    return p


@pytest.mark.parametrize("extra,want", [('["sysv_ipc"]', "ok\n"), ("[]", "errno=EPERM\n")])
def test_cli_profile_extra_allow(tmp_path, queue, extra, want):
    p = _profile(tmp_path, extra)
    r = subprocess.run([SANDLOCK, "run", "--profile-file", str(p), "--", HELPER, "msg",
                        str(queue)], capture_output=True, text=True, timeout=60)
    assert r.stdout == want, r.stderr
    assert (_take(queue) == b"guest") == (want == "ok\n")


def test_cli_profile_extra_allow_unknown_group(tmp_path):
    p = _profile(tmp_path, '["ipc"]')
    r = subprocess.run([SANDLOCK, "run", "--profile-file", str(p), "--", "/bin/true"],
                       capture_output=True, text=True)
    assert r.returncode == 125 and "unknown syscall group 'ipc'" in r.stderr


def test_python_profile_extra_allow(tmp_path, queue):
    sb = sandlock.load_profile(path=str(_profile(tmp_path, '["sysv_ipc"]')))
    assert sb.extra_allow_syscalls == ["sysv_ipc"]
    assert sb.run([HELPER, "msg", str(queue)]).stdout == b"ok\n"
    assert _take(queue) == b"guest"
    with pytest.raises(ProfileError, match="unknown syscall group 'ipc'"):
        sandlock.load_profile(path=str(_profile(tmp_path, '["ipc"]')))
