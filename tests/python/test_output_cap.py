"""Captured output is capped (max_output), never unbounded, never a crash."""
import pytest

import sandlock
from conftest import SYSTEM

MIB = 1 << 20


def _run(script, **kw):
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60, **kw)
    return sb.run(["/bin/sh", "-c", script])


def test_default_cap_keeps_64_mib_and_counts_the_rest():
    r = _run("yes | head -c %d" % (100 * MIB))
    assert r.success
    assert len(r.stdout) == 64 * MIB
    assert r.stdout[:4] == b"y\ny\n" and r.stdout.count(b"y") == 32 * MIB
    assert r.stdout_truncated == 36 * MIB
    assert r.stderr_truncated == 0


def test_smaller_cap_on_both_streams():
    r = _run("yes | head -c 5000; yes | head -c 3000 >&2", max_output=1000)
    assert (len(r.stdout), len(r.stderr)) == (1000, 1000)
    assert (r.stdout_truncated, r.stderr_truncated) == (4000, 2000)


def test_size_string_and_zero_for_no_cap():
    r = _run("yes | head -c %d" % (2 * MIB), max_output="1M")
    assert (len(r.stdout), r.stdout_truncated) == (MIB, MIB)
    r = _run("yes | head -c %d" % (70 * MIB), max_output=0)
    assert (len(r.stdout), r.stdout_truncated) == (70 * MIB, 0)


def test_complete_output_is_not_truncated(sb):
    r = sb.run(["/bin/echo", "hi"])
    assert r.stdout == b"hi\n" and r.stdout_truncated == 0 and r.stderr_truncated == 0


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (True, TypeError), ("lots", ValueError),
                                      (1.5, TypeError)])
def test_bad_max_output_is_rejected(bad, exc):
    with pytest.raises(exc):
        sandlock.Sandbox(fs_readable=SYSTEM, max_output=bad)
