"""The sources are not x86_64-only: every C file of the library and the CLI
compiles for aarch64 (syscall numbers from the aarch64 kernel headers, where
chmod, chown, utime, fork and friends do not exist) with -Wall -Werror.
Skipped where the cross compiler (gcc-aarch64-linux-gnu) is not installed."""
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CROSS = shutil.which("aarch64-linux-gnu-gcc")
SOURCES = sorted(str(p.relative_to(REPO)) for d in ("src", "cli")
                 for p in (REPO / d).rglob("*.c"))


@pytest.mark.skipif(not CROSS, reason="aarch64-linux-gnu-gcc not installed")
def test_every_source_compiles_for_aarch64():
    # One compiler run per file, but many files per process call: fast.
    failures = []
    for src in SOURCES:
        # OpenSSL's and http_parser's headers are the build host's (no arm64
        # -dev packages): searched after the cross compiler's own, so libc
        # and kernel headers still come from aarch64.
        r = subprocess.run([CROSS, "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
                            "-Iinclude", "-Isrc", "-Icli", "-fsyntax-only",
                            "-idirafter", "/usr/include",
                            "-idirafter", "/usr/include/x86_64-linux-gnu", src],
                           cwd=REPO, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"{src}:\n{r.stderr}")
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(not CROSS, reason="aarch64-linux-gnu-gcc not installed")
def test_the_cross_compiler_really_targets_aarch64():
    # Control: the check above would be worthless if the headers were x86's.
    probe = "#include <sys/syscall.h>\n#ifdef __NR_chmod\n#error x86 headers\n#endif\n"
    r = subprocess.run([CROSS, "-x", "c", "-fsyntax-only", "-"], input=probe,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    native = subprocess.run(["cc", "-x", "c", "-fsyntax-only", "-"], input=probe,
                            capture_output=True, text=True)
    assert native.returncode != 0  # x86_64 does have chmod


def test_sources_take_the_arch_from_libseccomp():
    # x86-only constants may appear only under #ifdef __x86_64__ or as
    # libseccomp's own SCMP_ARCH_X86_64 comparison.
    for src in SOURCES:
        text = (REPO / src).read_text()
        assert "AUDIT_ARCH_X86_64" not in text, src
