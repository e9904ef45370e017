"""Bad input is refused with exit 125 and a message naming the user's
flag, what is wrong and the fix (issue 23, "Bad input")."""
import pytest

from test_cli import SYS_RO, sandlock


@pytest.mark.parametrize("args,says", [
    (["--max-disk", "1M"], "--max-disk caps what a --workdir run stages"),
    (["--time-start", "2000-02-30T00:00:00Z"], "--time-start"),
    (["--time-start", "2001-02-29T00:00:00Z"], "a real date"),
    (["--workdir", "/tmp", "--dry-run", "--on-exit", "commit"], "drop --on-exit commit"),
    (["--workdir", "/tmp", "--on-error", "commit", "--dry-run"], "drop --on-error commit"),
    (["--fs-mount", "bad"], "--fs-mount 'bad': expected VIRTUAL:HOST"),
    (["--workdir", "/"], "--workdir '/': the whole filesystem cannot be staged"),
    (["-r", ""], "-r/--fs-read: empty path"),
    (["--chroot", "/nonexistent-sandlock-root"], "--chroot '/nonexistent-sandlock-root': No such file"),
    (["--net-allow-bind", "70000"], "--net-allow-bind '70000'"),
])
def test_refused_with_the_users_flag(args, says):
    r = sandlock("run", *SYS_RO, *args, "--", "/bin/true")
    assert r.returncode == 125, (r.returncode, r.stderr)
    assert says in r.stderr, r.stderr
    for internal in ("fs_read", "fs_mount", "net_allow_bind", "workdir '", "max_disk"):
        if internal == "workdir '":
            assert "sandlock: workdir" not in r.stderr
        else:
            assert internal not in r.stderr, r.stderr


def test_leap_day_is_accepted():
    r = sandlock("run", *SYS_RO, "--time-start", "2000-02-29T12:00:00Z", "--", "/bin/date", "-u",
                 "+%F")
    assert r.returncode == 0 and r.stdout == "2000-02-29\n", r.stderr


def test_version_takes_no_argument():
    r = sandlock("--version", "foo")
    assert r.returncode == 125 and "--version takes no argument" in r.stderr
    assert sandlock("--version").returncode == 0


def test_a_memory_limit_too_small_to_start_says_so():
    """-m 1: the child is OOM-killed before the command runs; the message
    names the flag and the fix, not "child exited during setup"."""
    r = sandlock("run", *SYS_RO, "-m", "1", "--", "/bin/true")
    if "no memory cgroup can be made here" in r.stderr:
        pytest.skip("no memory cgroup (unprivileged): -m is per process, the run's end "
                    "explains it (test_explain)")
    assert r.returncode == 125
    assert r.stderr == ("sandlock: sandboxed child was killed during setup: -m/--max-memory "
                        "(1 bytes) is too small to start the command; raise it (a few "
                        "megabytes at least)\n")
