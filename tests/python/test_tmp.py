"""--tmp / tmp=True / [filesystem] tmp: each run gets its own empty,
writable TMPDIR, removed at the end (src/launch/tmpdir.c), so builds need no grant
of the host's shared /tmp."""
import os
import subprocess

import pytest

import sandlock
from conftest import SYSTEM
from test_cli import PY, SANDLOCK, SYS_RO, sandlock as cli


# (no sh pipelines: dash under load may say "Cannot fork", docs/limits.md)
PROBE = ('echo "$TMPDIR"; '
         f'{PY} -c "import os; print(len(os.listdir(os.environ[\'TMPDIR\'])))"; '
         'f=$(mktemp) && echo made > "$f" && cat "$f"; '
         f'{PY} -c "import tempfile; print(tempfile.gettempdir())"')


def test_cli_tmp_is_private_empty_and_removed():
    r = cli("run", "--tmp", *SYS_RO, "--", "/bin/sh", "-c", PROBE)
    assert r.returncode == 0, r.stderr
    tmpdir, count, made, pytemp = r.stdout.split("\n")[:4]
    assert tmpdir.startswith("/") and os.path.basename(tmpdir).startswith("run-")
    assert count == "0" and made == "made" and pytemp == tmpdir
    assert not os.path.exists(tmpdir)                   # removed with its contents
    assert not os.path.exists(os.path.dirname(tmpdir))  # and the sandbox's own dir


def test_without_tmp_the_host_tmp_stays_out_of_reach(tmpdir_path):
    # Hostile: --tmp grants the private directory only, not the /tmp it is
    # made in.  The same write works outside first.
    target = os.path.join(tmpdir_path, "x")
    outside = subprocess.run(["/bin/sh", "-c", f"echo 1 > {target}"])
    assert outside.returncode == 0 and os.path.exists(target)
    os.unlink(target)
    r = cli("run", "--tmp", *SYS_RO, "--", "/bin/sh", "-c",
            f'echo 1 > {target} || echo denied; ls "$TMPDIR/.." >/dev/null 2>&1 || echo no-list')
    assert r.stdout == "denied\n" or r.stdout.startswith("denied"), (r.stdout, r.stderr)
    assert not os.path.exists(target)


def test_what_the_guest_left_is_removed_even_locked(tmpdir_path):
    # Unreadable directories, a symlink to a host file, a unix socket: all
    # removed, the symlink's target untouched.  Run as nobody too, where
    # mode 000 really locks the owner out.
    victim = os.path.join(tmpdir_path, "victim")
    with open(victim, "w") as f:
        f.write("keep")
    os.chmod(tmpdir_path, 0o755)
    os.chmod(victim, 0o644)
    script = ('d="$TMPDIR"; mkdir -p "$d/a/b"; touch "$d/a/b/f"; ln -s ' + victim + ' "$d/l"; '
              f'{PY} -c "import socket,os; socket.socket(socket.AF_UNIX).bind(os.environ[\'TMPDIR\']+\'/s\')"; '
              'chmod 000 "$d/a/b" "$d/a"; chmod 000 "$d"; echo "$d"')
    users = [[]]
    if os.geteuid() == 0:
        users.append(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"])
    for prefix in users:
        r = subprocess.run([*prefix, str(SANDLOCK), "run", "--tmp", *SYS_RO, "--",
                            "/bin/sh", "-c", script], capture_output=True, text=True,
                           timeout=60, cwd="/")
        assert r.returncode == 0, (prefix, r.stderr)
        assert not os.path.exists(r.stdout.strip()), prefix
        assert open(victim).read() == "keep"


def test_removed_after_timeout():
    r = cli("run", "--tmp", "-t", "0.5", *SYS_RO, "--", "/bin/sh", "-c",
            'echo "$TMPDIR"; touch "$TMPDIR/f"; exec sleep 30')
    assert r.returncode == 124
    assert not os.path.exists(r.stdout.strip())


def test_python_each_run_starts_empty():
    sb = sandlock.Sandbox(fs_readable=SYSTEM, tmp=True, timeout=60)
    first = sb.run(["/bin/sh", "-c", 'echo x > "$TMPDIR/left"; echo "$TMPDIR"'])
    second = sb.run(["/bin/sh", "-c", 'ls -A "$TMPDIR"; echo "$TMPDIR"'])
    assert first.exit_code == 0 and second.exit_code == 0, (first.stderr, second.stderr)
    assert second.stdout.split(b"\n")[0] != b"left"
    assert first.stdout != second.stdout
    assert not os.path.exists(first.stdout.strip().decode())


def test_profile_key(tmpdir_path):
    prof = os.path.join(tmpdir_path, "p.toml")
    with open(prof, "w") as f:
        f.write('[filesystem]\nread = ["/usr", "/lib", "/lib64", "/bin", "/etc"]\ntmp = true\n')
    r = cli("run", "--profile-file", prof, "--", "/bin/sh", "-c", 'touch "$TMPDIR/f" && echo ok')
    assert r.stdout == "ok\n", r.stderr
    assert sandlock.load_profile(path=prof).tmp is True


def test_refused_where_it_cannot_work(tmpdir_path):
    with pytest.raises(sandlock.PolicyValueError, match="tmp"):
        sandlock.confine(sandlock.Sandbox(fs_readable=SYSTEM, tmp=True))
    r = cli("run", "--tmp", "--chroot", tmpdir_path, "--", "/bin/true")
    assert r.returncode == 125 and "--fs-mount /tmp:" in r.stderr


CACHES = 'echo "$TMPDIR|${XDG_CACHE_HOME:-unset}|${npm_config_cache:-unset}"'


def test_per_user_caches_go_to_the_private_tmp(tmpdir_path):
    # With only the project writable, ~/.npm and ~/.cache are not: npm ci
    # fails outright (tests/python/test_first_hour.py), go too.  --tmp
    # points them into the run's TMPDIR; without --tmp nothing is set.
    r = cli("run", "--tmp", "--clean-env", *SYS_RO, "--", "/bin/sh", "-c",
            CACHES + '; mkdir -p "$XDG_CACHE_HOME/x" "$npm_config_cache" && echo made')
    tmp, xdg, npm = r.stdout.split("\n")[0].split("|")
    assert (xdg, npm) == (tmp + "/.cache", tmp + "/.npm"), r.stderr
    assert r.stdout.split("\n")[1] == "made" and not os.path.exists(tmp)
    r = cli("run", "--clean-env", *SYS_RO, "--", "/bin/sh", "-c", CACHES)
    assert r.stdout.endswith("|unset|unset\n"), r.stdout + r.stderr


def test_a_cache_the_caller_names_is_kept(tmpdir_path):
    r = cli("run", "--tmp", "--env", "npm_config_cache=" + tmpdir_path,
            "--env", "XDG_CACHE_HOME=/nowhere", *SYS_RO, "--", "/bin/sh", "-c", CACHES)
    assert r.stdout.split("|")[1:] == ["/nowhere", tmpdir_path + "\n"], r.stderr
    # npm takes its variables in either case: an upper-case one is kept too
    r = cli("run", "--tmp", "--env", "NPM_CONFIG_CACHE=/theirs", *SYS_RO, "--", "/bin/sh", "-c",
            CACHES + '; echo "$NPM_CONFIG_CACHE"')
    assert r.stdout.split("\n")[0].endswith("|unset") and r.stdout.split("\n")[1] == "/theirs"
    sb = sandlock.Sandbox(fs_readable=SYSTEM, tmp=True, env={"XDG_CACHE_HOME": "/mine"})
    r = sb.run(["/bin/sh", "-c", CACHES])
    tmp, xdg, npm = r.stdout.decode().strip().split("|")
    assert (xdg, npm) == ("/mine", tmp + "/.npm"), r.stderr
