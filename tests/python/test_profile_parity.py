"""One profile, two loaders: `sandlock run --profile-file` (cli/profile.c)
and sandlock.profile.load_profile (profile.py) must accept and refuse the
same files (issue 24 item 5).  Both read the file through the library's
sandlock_profile_load, so every case here must agree; the CLI is run for
real and the Python loader called, so a Python-side schema coming back
would show.
"""
import os
import subprocess
from pathlib import Path

import pytest

from sandlock.profile import ProfileError, load_profile

REPO = Path(__file__).resolve().parents[2]
SANDLOCK = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build") / "sandlock"

AGREE = {
    "valid": b'[limits]\nprocesses = 10\nmemory = "64M"\n[filesystem]\nread = ["/usr"]\n',
    "dotted_key": b'limits.memory = "1G"\n',
    "hex_integer": b"[limits]\nprocesses = 0x10\n",
    "bare_date": b"[determinism]\ntime_start = 2020-01-01T00:00:00Z\n",
    "bad_memory": b'[limits]\nmemory = "lots"\n',
    "negative_seed": b"[determinism]\nrandom_seed = -1\n",
    "bad_net_rule": b'[network]\nallow = ["nonsense:::"]\n',
    "too_many_gpus": b"[limits]\ngpu_devices = [" + b",".join([b"0"] * 65) + b"]\n",
    "unsupported_asks_nothing": b"[program]\nuid = false\n",
    "duplicate_table": b"[limits]\n[limits]\n",
    "multiline_string": b'[program]\nexec = """ls"""\n',
    "multiline_inline_table": b'[program]\nenv = {\n A = "b" }\n',
    "top_level_key": b"x = 1\n",
    "unknown_key": b"[limits]\nfoo = 1\n",
    "bad_time": b'[determinism]\ntime_start = "yesterday"\n',
    "cpu_zero": b"[limits]\ncpu = 0\n",
    "nan": b"[limits]\ncpu = nan\n",
    # Both refuse, in other words: C says "dotted keys", Python "unknown key 'x'".
    "dotted_table_header": b"[limits.x]\nmemory = 1\n",
    # TOML text is UTF-8: a string that is not is refused by both.
    "not_utf8": b'[program]\nexec = "\xff"\n',
    # A read-only mount: the CLI's --fs-mount V:H:ro, Python's fs_mount_ro.
    "read_only_mount": b'[filesystem]\nchroot = "/"\nmount = ["/a:/tmp:ro"]\n',
}


def cli_refuses(path):
    """The CLI refused the profile itself: its error names the file (a run
    that fails later, e.g. the command not found, does not count)."""
    r = subprocess.run([str(SANDLOCK), "run", "--profile-file", str(path), "--", "true"],
                       capture_output=True, timeout=60)
    return r.stderr.decode(errors="replace").startswith("sandlock: %s:" % path)


def python_refuses(path):
    try:
        load_profile(path=str(path))
    except ProfileError:
        return True
    return False


def _check(tmp_path, name, text):
    path = tmp_path / (name + ".toml")
    path.write_bytes(text)
    refused = cli_refuses(path)
    assert refused == python_refuses(path), name
    return refused


def test_the_checks_tell_refused_from_accepted(tmp_path):
    """Neither probe is stuck on one answer: a valid profile passes both,
    an unknown key fails both."""
    assert not _check(tmp_path, "valid", AGREE["valid"])
    assert _check(tmp_path, "unknown_key", AGREE["unknown_key"])


@pytest.mark.parametrize("name", sorted(AGREE))
def test_both_loaders_agree(tmp_path, name):
    _check(tmp_path, name, AGREE[name])

