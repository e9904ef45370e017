"""The path presets as a security layer: every path syscall, and the race.

* A second guest thread flipping the path buffer between an allowed and a
  denied file beats a check-then-CONTINUE preset (the control, with
  ``on_behalf=False``); the default presets open the file on the child's
  behalf and never lose.
* ``COMMON_PATH_SYSCALLS`` alone is bypassed by open(2) and openat2(2) (the
  control); ``ALL_PATH_SYSCALLS`` is not, and every path argument of every
  syscall in it reaches the preset.
"""
import ctypes
import errno
import json
import os

import pytest

import sandlock
from sandlock.presets import (ALL_PATH_SYSCALLS, COMMON_PATH_SYSCALLS, PathAllowHandler,
                              PathDenyHandler, _PATH_SPECS, _TARGET)

from conftest import PY, REPO, SYSTEM

HELPERS = os.path.join(os.environ.get("SANDLOCK_BUILD", os.path.join(REPO, "build")), "helpers")
RACE = os.path.join(HELPERS, "race_open")
# Python handlers are slower than the flipper's window: the control loses
# less often than in C (~0.1-1% on 2 busy cores), so it gets more tries.
TRIES = 5000
CONTROL_TRIES = 20000
OPEN_FAMILY = ("open", "creat", "openat", "openat2")
# System trees as they really are (merged /usr: /lib -> /usr/lib).
SYSTEM_REAL = sorted({os.path.realpath(p) + "/*" for p in SYSTEM} | {p + "/*" for p in SYSTEM})


@pytest.fixture
def secrets(tmpdir_path):
    for name, content in (("secret_A", "ALLOWED"), ("secret_B", "DENIED")):
        with open(os.path.join(tmpdir_path, name), "w") as f:
            f.write(content)
    return tmpdir_path


def race(d, handler, how="openat", tries=TRIES):
    """Run race_open in d under handler; (opened, leaked)."""
    if not os.access(RACE, os.X_OK):
        pytest.fail("%s missing: run make first" % RACE)
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [HELPERS, d], timeout=120)
    r = sb.run_with_handlers([RACE, d, str(tries), how], [(s, handler) for s in OPEN_FAMILY])
    assert r.success, r.stderr
    fields = dict(kv.split("=") for kv in r.stdout.decode().split())
    assert int(fields["tries"]) == tries
    print("race %s: %s" % (how, r.stdout.decode().strip()))
    return int(fields["opened"]), int(fields["leaked"])


def test_race_check_then_continue_loses(secrets):
    """The control: the race is real."""
    opened, leaked = race(secrets, PathDenyHandler([secrets + "/secret_B"], on_behalf=False),
                          tries=CONTROL_TRIES)
    assert opened > 0 and leaked > 0


def test_race_allow_check_then_continue_loses(secrets):
    allow = PathAllowHandler(SYSTEM_REAL + [HELPERS + "/*", secrets + "/secret_A"],
                             on_behalf=False)
    opened, leaked = race(secrets, allow, tries=CONTROL_TRIES)
    assert opened > 0 and leaked > 0


# (openat2 is answered ENOSYS by the sandbox's filter: nothing to race.)
@pytest.mark.parametrize("how", ["openat", "open"])
def test_race_deny_on_behalf_never_loses(secrets, how):
    tries = CONTROL_TRIES if how == "openat" else TRIES  # as many as the control
    opened, leaked = race(secrets, PathDenyHandler([secrets + "/secret_B"]), how, tries)
    assert opened > 0
    assert leaked == 0


def test_race_allow_on_behalf_never_loses(secrets):
    allow = PathAllowHandler(SYSTEM_REAL + [HELPERS + "/*", secrets + "/secret_A"])
    opened, leaked = race(secrets, allow)
    assert opened > 0
    assert leaked == 0


def test_open_on_behalf_sees_through_symlinks(secrets):
    """A link to a denied file is refused on the file it opens."""
    os.symlink(secrets + "/secret_B", secrets + "/innocent")
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [secrets], timeout=60)
    ctl = sb.run(["/bin/cat", secrets + "/innocent"])
    assert ctl.stdout == b"DENIED"
    deny = PathDenyHandler([secrets + "/secret_B"])
    r = sb.run_with_handlers(["/bin/cat", secrets + "/innocent"],
                             [(s, deny) for s in ALL_PATH_SYSCALLS])
    assert b"DENIED" not in r.stdout and not r.success


# ---- ALL_PATH_SYSCALLS ----
def test_all_path_syscalls_contains_the_common_ones():
    assert COMMON_PATH_SYSCALLS == ["openat", "unlinkat", "newfstatat", "statx", "faccessat",
                                    "readlinkat", "mkdirat", "execveat", "execve"]
    assert set(COMMON_PATH_SYSCALLS) <= set(ALL_PATH_SYSCALLS)
    for name in ("open", "creat", "openat2", "stat", "lstat", "rename", "renameat2", "link",
                 "symlink", "truncate", "chdir", "mknod", "inotify_add_watch",
                 "fanotify_mark", "getxattr", "utime", "faccessat2", "fchmodat2"):
        assert name in ALL_PATH_SYSCALLS, name


# The guest: run raw syscalls given as [nr, [arg, ...]] (str args become
# C strings), print the errno of each (0 on success) as JSON.
GUEST = r"""
import ctypes, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = []
for nr, args in json.loads(sys.argv[1]):
    c = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in args]
    ctypes.set_errno(0)
    out.append(ctypes.get_errno() if libc.syscall(ctypes.c_long(nr), *c) < 0 else 0)
print(json.dumps(out))
"""

AT_FDCWD = -100


def guest_run(sb, cases, handlers):
    r = sb.run_with_handlers([PY, "-c", GUEST, json.dumps(cases)], handlers)
    assert r.success, r.stderr
    return json.loads(r.stdout)


# x86_64 numbers of the legacy forms of COMMON_PATH_SYSCALLS' entries
# (open, creat and openat2 for openat; stat, lstat for newfstatat; access
# for faccessat; readlink for readlinkat; unlink and rmdir for unlinkat;
# mkdir for mkdirat), each with its path first.
LEGACY = [("open", 2, [0]), ("creat", 85, [0o600]), ("stat", 4, [0]), ("lstat", 6, [0]),
          ("access", 21, [0]), ("readlink", 89, [0, 0]), ("unlink", 87, []),
          ("rmdir", 84, []), ("mkdir", 83, [0o700])]


def test_the_spec_recipe_is_not_bypassed_by_legacy_syscalls(tmpdir_path):
    """The spec's recipe registers a preset on COMMON_PATH_SYSCALLS; each
    legacy form of those calls reaches it too.  The control: without the
    preset each call gets past the sandbox (an answer other than the
    preset's errno: done, or failing on its own)."""
    secret = os.path.join(tmpdir_path, "secret")
    open(secret, "w").close()
    sb = sandlock.Sandbox(fs_writable=[tmpdir_path], fs_readable=SYSTEM, timeout=60)
    cases = [[nr, [secret] + rest] for _name, nr, rest in LEGACY]
    assert errno.ENOTUNIQ not in guest_run(sb, cases, [])
    os.rmdir(secret)  # the control unlinked the file and made a directory there
    open(secret, "w").close()
    for make in (lambda: PathDenyHandler([secret], errno=errno.ENOTUNIQ),
                 lambda: PathAllowHandler(SYSTEM_REAL + [HELPERS + "/*"],
                                          errno=errno.ENOTUNIQ)):
        h = make()
        got = guest_run(sb, cases, [(s, h) for s in COMMON_PATH_SYSCALLS])
        assert got == [errno.ENOTUNIQ] * len(LEGACY), list(zip(LEGACY, got))
    assert os.path.exists(secret)


def slot_cases(denied, ok_dir):
    """For every syscall and every path slot: the denied path in that slot,
    a fresh path under ok_dir in the others.  Returns [(label, case)]."""
    out = []
    for name in ALL_PATH_SYSCALLS:
        nr = _native_nr(name)
        spec = _PATH_SPECS[name]
        for k in range(len(spec)):
            args = [0] * 6
            for path_arg, dirfd_arg in spec:
                if dirfd_arg is not None and dirfd_arg != _TARGET:
                    args[dirfd_arg] = AT_FDCWD
            for j, (path_arg, _) in enumerate(spec):
                args[path_arg] = denied if j == k else "%s/%s-%d-%d" % (ok_dir, name, k, j)
            out.append(("%s slot %d" % (name, k), [nr, args]))
    return out


def _native_nr(name):
    from sandlock import _native
    return _native.syscall_nr(name)


def test_every_path_slot_of_every_syscall_reaches_the_preset(tmpdir_path):
    """Each syscall of ALL_PATH_SYSCALLS, with the denied path in each of its
    path arguments in turn, fails with the preset's (unusual) errno; the
    same calls on paths inside the allowed directory never do."""
    denied_dir = os.path.join(tmpdir_path, "deny")
    ok_dir = os.path.join(tmpdir_path, "ok")
    os.mkdir(denied_dir)
    os.mkdir(ok_dir)
    denied = os.path.join(denied_dir, "secret")
    open(denied, "w").close()
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[tmpdir_path], timeout=60)
    deny = PathDenyHandler([denied_dir, denied_dir + "/*"], errno=errno.ENOTUNIQ)
    regs = [(s, deny) for s in ALL_PATH_SYSCALLS]
    labelled = slot_cases(denied, ok_dir)
    got = guest_run(sb, [c for _, c in labelled], regs)
    # openat2 never reaches a handler: the filter answers ENOSYS (README,
    # containment rules), which is no way through either.
    filtered = {"openat2 slot 0": errno.ENOSYS}
    missed = [(label, e) for (label, _), e in zip(labelled, got)
              if e != filtered.get(label, errno.ENOTUNIQ)]
    assert missed == []
    # Control: nothing denies by default (a fresh ok path in every slot).
    ctl_cases = []
    for label, (nr, args) in labelled:
        args = [("%s/ctl-%d" % (ok_dir, i) if a == denied else a) for i, a in enumerate(args)]
        if nr in (_native_nr("execve"), _native_nr("execveat"), _native_nr("chdir"),
                  _native_nr("chroot")):
            continue  # harmless, but an exec or chdir would change the guest
        ctl_cases.append((label, [nr, args]))
    got = guest_run(sb, [c for _, c in ctl_cases], regs)
    wrongly = [label for (label, _), e in zip(ctl_cases, got) if e == errno.ENOTUNIQ]
    assert wrongly == []


def test_rename_checks_both_paths(tmpdir_path):
    """Moving an allowed file onto a denied name, or a denied file out."""
    d = tmpdir_path
    for p in ("a", "denied_b"):
        with open(os.path.join(d, p), "w") as f:
            f.write(p)
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[d], timeout=60)
    deny = PathDenyHandler([d + "/denied*"])
    script = ("import os, sys\n"
              "for s, t in (('a', 'denied_x'), ('denied_b', 'y')):\n"
              "    try:\n        os.rename(s, t); print('moved')\n"
              "    except OSError as e:\n        print(e.errno)\n")
    cmd = ["/bin/sh", "-c", "cd %s && exec %s -c \"$0\"" % (d, PY), script]
    ctl = sb.run(cmd)
    assert ctl.stdout.split() == [b"moved", b"moved"], ctl.stderr
    os.rename(d + "/denied_x", d + "/a")
    os.rename(d + "/y", d + "/denied_b")
    r = sb.run_with_handlers(cmd, [(s, deny) for s in ALL_PATH_SYSCALLS])
    assert r.stdout.split() == [str(errno.EPERM).encode()] * 2
    assert os.path.exists(d + "/a") and os.path.exists(d + "/denied_b")


def test_symlink_to_a_denied_file_is_refused(tmpdir_path):
    d = tmpdir_path
    os.mkdir(d + "/deny")
    open(d + "/deny/s", "w").close()
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[d], timeout=60)
    deny = PathDenyHandler([d + "/deny/*"])
    cmd = ["/bin/sh", "-c", "cd %s && ln -s deny/s l1; ln -s %s/deny/s l2; ls" % (d, d)]
    r = sb.run_with_handlers(cmd, [(s, deny) for s in ALL_PATH_SYSCALLS])
    assert not os.path.lexists(d + "/l1") and not os.path.lexists(d + "/l2")
    ctl = sb.run(cmd)
    assert os.path.lexists(d + "/l1") and os.path.lexists(d + "/l2"), ctl.stderr


def test_open_on_behalf_api(secrets):
    """ctx.open_on_behalf: decide on the real path and the stat of the file."""
    seen = []

    class OnlyA(sandlock.Handler):
        def handle(self, ctx):
            def allow(path, st):
                seen.append((path, st.st_ino))
                return not path.endswith("_B")
            return ctx.open_on_behalf(allow=allow, errno=errno.ENOTUNIQ)

    sb = sandlock.Sandbox(fs_readable=SYSTEM + [secrets], timeout=60)
    h = OnlyA()
    r = sb.run_with_handlers(
        ["/bin/sh", "-c", 'cat "$0"/secret_A; cat "$0"/secret_B', secrets],
        [(s, h) for s in OPEN_FAMILY])
    assert r.stdout == b"ALLOWED"
    assert os.strerror(errno.ENOTUNIQ).encode() in r.stderr
    inos = dict(seen)
    assert inos[secrets + "/secret_A"] == os.stat(secrets + "/secret_A").st_ino


def test_open_on_behalf_refuses_other_syscalls():
    from sandlock.handler import HandlerCtx
    from sandlock import _native
    ctx = HandlerCtx(1, 1, 0, _native.syscall_nr("unlinkat"), 0, 0, (0,) * 6)
    with pytest.raises(ValueError):
        ctx.open_on_behalf()


def test_untrappable_path_syscalls_answer_enosys(tmpdir_path):
    """getxattrat, listxattrat and file_getattr take a path but have no name
    a handler can be registered on: the sandbox answers ENOSYS, so they
    cannot carry a path past the presets.  The control: the kernel has
    them (anything but ENOSYS outside)."""
    f = os.path.join(tmpdir_path, "f")
    open(f, "w").close()
    cases = [[464, [AT_FDCWD, f, 0, "user.x", 0]],   # getxattrat
             [465, [AT_FDCWD, f, 0, 0, 0]],           # listxattrat
             [468, [AT_FDCWD, f, 0, 0, 0]]]           # file_getattr
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    outside = []
    for nr, args in cases:
        c = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a)
             for a in args]
        ctypes.set_errno(0)
        outside.append(ctypes.get_errno() if libc.syscall(ctypes.c_long(nr), *c) < 0 else 0)
    if errno.ENOSYS in outside:
        pytest.skip("this kernel lacks getxattrat/listxattrat/file_getattr")
    sb = sandlock.Sandbox(fs_readable=SYSTEM + [tmpdir_path], timeout=60)
    deny = PathDenyHandler([f])
    assert guest_run(sb, cases, [(s, deny) for s in ALL_PATH_SYSCALLS]) == [errno.ENOSYS] * 3


def test_refused_open_neither_truncates_nor_creates(secrets):
    """O_TRUNC through a link to a denied file, and O_CREAT of a denied
    name: refused before they take effect.  The control: continued, the
    kernel truncates the denied file through the link."""
    d = secrets
    os.symlink(d + "/secret_B", d + "/innocent")
    sb = sandlock.Sandbox(fs_readable=SYSTEM, fs_writable=[d], timeout=60)
    cmd = ["/bin/sh", "-c", 'true > "$0"/innocent; true > "$0"/secret_B2; echo done', d]
    deny = PathDenyHandler([d + "/secret_B*"])
    r = sb.run_with_handlers(cmd, [(s, deny) for s in ALL_PATH_SYSCALLS])
    assert r.stdout == b"done\n"
    assert open(d + "/secret_B").read() == "DENIED"
    assert not os.path.exists(d + "/secret_B2")
    ctl = sb.run_with_handlers(cmd, [(s, PathDenyHandler([d + "/secret_B*"], on_behalf=False))
                                     for s in ALL_PATH_SYSCALLS])
    assert ctl.stdout == b"done\n"
    assert open(d + "/secret_B").read() == ""


def test_open_on_behalf_from_an_async_handler(secrets):
    """Deferred handlers (workers) may open on behalf too."""
    class OnlyA(sandlock.Handler):
        async def handle(self, ctx):
            return ctx.open_on_behalf(allow=lambda path, st: not path.endswith("_B"))

    sb = sandlock.Sandbox(fs_readable=SYSTEM + [secrets], timeout=60)
    h = OnlyA()
    r = sb.run_with_handlers(["/bin/sh", "-c", 'cat "$0"/secret_A; cat "$0"/secret_B', secrets],
                             [(s, h) for s in ("open", "openat")])
    assert r.stdout == b"ALLOWED"
    assert b"Permission denied" in r.stderr


def test_name_is_the_virtual_hostname():
    """Sandbox(name=...) is what uname, /proc/sys/kernel/hostname and
    /etc/hostname (opened on behalf with /proc readable) show."""
    host = os.uname().nodename
    assert host != "pybox-1"  # control
    sb = sandlock.Sandbox(fs_readable=SYSTEM + ["/proc"], name="pybox-1", timeout=60)
    r = sb.run(["/bin/sh", "-c", "uname -n; cat /proc/sys/kernel/hostname /etc/hostname"])
    assert r.stdout == b"pybox-1\n" * 3
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60).run(["/bin/sh", "-c", "uname -n; echo $PPID"])
    name, init = r.stdout.decode().split()
    assert name == "sandbox-" + init
