"""`make install` / `make uninstall` into a temporary DESTDIR: the installed
library links through pkg-config and runs a sandboxed command, the man
pages render, the CLI and the bash completion work, uninstall cleans up."""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ASAN_CFLAGS

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
VERSION = re.search(r'#define SANDLOCK_VERSION "([^"]+)"',
                    (REPO / "include" / "sandlock.h").read_text()).group(1)

PROGRAM = r"""
#include <stdio.h>
#include <sandlock.h>
int main(void)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_read(b, "/usr");
	sandlock_sandbox_builder_fs_read(b, "/bin");
	sandlock_sandbox_builder_fs_read(b, "/lib");
	int err; char *msg;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb) { fprintf(stderr, "build: %s\n", msg); return 2; }
	const char *argv[] = { "/bin/echo", "from-the-sandbox", NULL };
	sandlock_result_t *r = sandlock_run_err(sb, argv, 2, &err, &msg);
	if (!r) { fprintf(stderr, "run: %s\n", msg); return 3; }
	char *out = sandlock_result_stdout(r);
	printf("%s %s exit=%d", sandlock_version(), out, sandlock_result_exit_code(r));
	sandlock_string_free(out);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	return 0;
}
"""


def make(*args, **kw):
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(k, None)
    return subprocess.run(["make", "-s", "-C", str(REPO), f"BUILD={BUILD}", *args],
                          env=env, capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def destdir():
    d = Path(tempfile.mkdtemp(prefix="sandlock-install-"))
    r = make("install", f"DESTDIR={d}", "PREFIX=/usr")
    assert r.returncode == 0, r.stderr
    yield d
    shutil.rmtree(d, ignore_errors=True)


def pkg_config(destdir, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(destdir / "usr/lib/pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=str(destdir), PKG_CONFIG_LIBDIR="/nonexistent")
    r = subprocess.run(["pkg-config", *args, "sandlock"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_library_is_installed_with_soname_and_symlinks(destdir):
    lib = destdir / "usr/lib"
    real = lib / f"libsandlock.so.{VERSION}"
    assert real.is_file() and not real.is_symlink()
    assert os.readlink(lib / "libsandlock.so.1") == real.name
    assert os.readlink(lib / "libsandlock.so") == "libsandlock.so.1"
    dyn = subprocess.run(["readelf", "-d", str(real)], capture_output=True, text=True).stdout
    assert "Library soname: [libsandlock.so.1]" in dyn
    assert (lib / "libsandlock.a").is_file()
    assert (destdir / "usr/include/sandlock.h").read_text() == \
        (REPO / "include/sandlock.h").read_text()


def test_pkg_config_file_names_the_install_prefix(destdir):
    pc = (destdir / "usr/lib/pkgconfig/sandlock.pc").read_text()
    assert "prefix=/usr\n" in pc and "libdir=/usr/lib\n" in pc
    assert f"Version: {VERSION}\n" in pc
    assert pkg_config(destdir, "--modversion") == [VERSION]
    assert pkg_config(destdir, "--cflags") == [f"-I{destdir}/usr/include"]
    assert pkg_config(destdir, "--libs") == [f"-L{destdir}/usr/lib", "-lsandlock"]
    assert pkg_config(destdir, "--libs", "--static")[-6:] == ["-lseccomp", "-lpthread",
                                                              "-lhttp_parser", "-lssl", "-lcrypto",
                                                              "-ljansson"]


def compile_program(destdir, tmp_path, libs):
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "prog"
    r = subprocess.run(["cc", *ASAN_CFLAGS, "-o", str(exe), str(src),
                        *pkg_config(destdir, "--cflags"), *libs], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def test_program_built_with_pkg_config_links_the_shared_library(destdir, tmp_path):
    exe = compile_program(destdir, tmp_path, pkg_config(destdir, "--libs"))
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "Shared library: [libsandlock.so.1]" in needed
    env = dict(os.environ, LD_LIBRARY_PATH=str(destdir / "usr/lib"))
    r = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{VERSION} from-the-sandbox\n exit=0"
    # and it really is the installed copy that was loaded
    ldd = subprocess.run(["ldd", str(exe)], env=env, capture_output=True, text=True).stdout
    assert f"{destdir}/usr/lib/libsandlock.so.1" in ldd


def test_program_links_the_static_library_with_libs_private(destdir, tmp_path):
    libs = ["-l:libsandlock.a" if a == "-lsandlock" else a
            for a in pkg_config(destdir, "--libs", "--static")]
    exe = compile_program(destdir, tmp_path, libs)
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "libsandlock" not in needed
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "from-the-sandbox" in r.stdout, r.stderr


@pytest.mark.parametrize("page,title", [("man1/sandlock.1", "SANDLOCK(1)"),
                                        ("man3/sandlock.3", "SANDLOCK(3)")])
def test_man_pages_render(destdir, page, title):
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", str(destdir / "usr/share/man" / page)],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stderr == "", r.stderr  # groff warnings are errors in the source
    assert r.stdout.lstrip().startswith(title)
    assert f"sandlock {VERSION}" in r.stdout and "@VERSION@" not in r.stdout
    if page.endswith(".1"):
        for opt in ("--fs-read", "--json", "--status-fd", "--profile"):
            assert opt in r.stdout


def test_installed_cli_runs(destdir):
    cli = destdir / "usr/bin/sandlock"
    r = subprocess.run([str(cli), "--version"], capture_output=True, text=True)
    assert r.stdout == f"sandlock {VERSION}\n"
    r = subprocess.run([str(cli), "run", "-r", "/usr", "-r", "/bin", "-r", "/lib", "--",
                        "/bin/echo", "ok"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr


def complete(destdir, words):
    """What the installed bash completion offers for `words` (last = current)."""
    script = (f"source {destdir}/usr/share/bash-completion/completions/sandlock\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); "
              f"COMP_CWORD={len(words) - 1}\n_sandlock\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    r = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True,
                       env=dict(os.environ, PATH=f"{destdir}/usr/bin:/usr/bin:/bin"))
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completion(destdir):
    assert complete(destdir, ["sandlock", ""]) == ["run", "learn", "profile", "check", "ps",
                                                   "inspect", "kill", "stop", "--help",
                                                   "--version"]
    assert "--trace" in complete(destdir, ["sandlock", "learn", "--tr"])
    assert complete(destdir, ["sandlock", "run", "--fs-"]) == \
        ["--fs-read", "--fs-write", "--fs-deny", "--fs-mount", "--fs-storage"]
    assert "--status-fd" in complete(destdir, ["sandlock", "run", "--st"])
    assert complete(destdir, ["sandlock", "profile", ""]) == ["list", "show", "delete"]


def test_completion_and_man_page_know_every_command(destdir):
    """Every command `sandlock --help` lists is offered by the bash and zsh
    completion and is in sandlock(1)'s synopsis."""
    import re as _re
    help_text = subprocess.run([str(destdir / "usr/bin/sandlock"), "--help"],
                               capture_output=True, text=True).stdout
    block = help_text.split("Commands:")[1].split("\n\n")[0]
    cmds = _re.findall(r"^  ([a-z]+) ", block, _re.M)
    assert {"run", "learn", "ps", "kill", "stop"} <= set(cmds), cmds
    offered = complete(destdir, ["sandlock", ""])
    zsh = (destdir / "usr/share/zsh/site-functions/_sandlock").read_text()
    zcmds = _re.search(r"1:command:\(([^)]*)\)", zsh).group(1).split()
    synopsis = (REPO / "man" / "sandlock.1").read_text().split(".SH DESCRIPTION")[0]
    for c in cmds:
        assert c in offered, c
        assert c in zcmds, c
        assert ".B sandlock " + c in synopsis, c


def test_default_prefix_and_uninstall(tmp_path):
    d = tmp_path / "root"
    # A directory that was there before, with something of someone else's:
    # uninstall leaves both; every directory install made goes.
    (d / "usr/local/share/man").mkdir(parents=True)
    (d / "usr/local/share/man/other.7").write_text("x")
    r = make("install", f"DESTDIR={d}")
    assert r.returncode == 0, r.stderr
    assert (d / "usr/local/bin/sandlock").is_file()
    assert "prefix=/usr/local\n" in (d / "usr/local/lib/pkgconfig/sandlock.pc").read_text()
    assert (d / "usr/local/share/man/man1").is_dir()
    r = make("install", f"DESTDIR={d}")  # again: it still knows what it made
    assert r.returncode == 0, r.stderr
    r = make("uninstall", f"DESTDIR={d}")
    assert r.returncode == 0, r.stderr
    left = sorted(str(p.relative_to(d)) for p in d.rglob("*"))
    assert left == ["usr", "usr/local", "usr/local/share", "usr/local/share/man",
                    "usr/local/share/man/other.7"]


def test_completion_and_man_page_know_every_run_option(destdir):
    """Every long option of `sandlock run --help` is offered by the bash and
    zsh completion and documented in sandlock(1)."""
    import re as _re
    help_text = subprocess.run([str(destdir / "usr/bin/sandlock"), "run", "--help"],
                               capture_output=True, text=True).stdout
    supported = help_text.split("not supported yet")[0]
    opts = set(_re.findall(r"(?<![\w-])--[a-z][a-z-]+", supported))
    assert "--fs-read" in opts and "--json" in opts
    bash = (destdir / "usr/share/bash-completion/completions/sandlock").read_text()
    zsh = (destdir / "usr/share/zsh/site-functions/_sandlock").read_text()
    man = (REPO / "man" / "sandlock.1").read_text().replace("\\-", "-")
    for o in sorted(opts):
        assert o in bash, o
        assert o.lstrip("-") in zsh, o
        assert o in man, o


@pytest.mark.parametrize("command", ["learn", "check", "ps", "inspect", "stop"])
def test_completion_and_man_page_know_every_option_of(destdir, command):
    """The options a command's usage shows (beyond those of `run`, checked
    above) are offered by the bash and zsh completion and in sandlock(1)."""
    r = subprocess.run([str(destdir / "usr/bin/sandlock"), command, "--help"],
                       capture_output=True, text=True)
    usage = (r.stdout + r.stderr).split("Use the profile")[0]
    assert f"sandlock {command}" in usage or f"'{command}'" in usage, usage
    opts = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z-]*", usage)) - {"--help", "-h"}
    bash = (destdir / "usr/share/bash-completion/completions/sandlock").read_text()
    zsh = (destdir / "usr/share/zsh/site-functions/_sandlock").read_text()
    man = (REPO / "man" / "sandlock.1").read_text().replace("\\-", "-")
    assert opts, usage
    for o in sorted(opts):
        word = re.compile(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])")
        for name, text in (("bash", bash), ("zsh", zsh), ("sandlock(1)", man)):
            assert word.search(text), f"{command} {o} not in {name}"


def test_install_and_uninstall_refresh_the_linker_cache(tmp_path):
    """Installed for real (no DESTDIR), both refresh the linker cache, so
    the SONAME is found after install and forgotten after uninstall; every
    directory install made goes.  ldconfig is a recorder on PATH here (the
    host's cache is not this test's to change)."""
    bindir, log, prefix = tmp_path / "bin", tmp_path / "ldconfig.log", tmp_path / "prefix"
    bindir.mkdir()
    fake = bindir / "ldconfig"
    fake.write_text(f"#!/bin/sh\necho \"ldconfig $*\" >> {log}\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    for k in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(k, None)

    def mk(target):
        r = subprocess.run(["make", "-s", "-C", str(REPO), f"BUILD={BUILD}", f"PREFIX={prefix}",
                            target], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    mk("install")
    assert (prefix / "lib" / "libsandlock.so.1").exists()
    assert log.read_text() == "ldconfig \n"
    mk("uninstall")
    assert log.read_text() == "ldconfig \nldconfig \n"
    assert not prefix.exists()
