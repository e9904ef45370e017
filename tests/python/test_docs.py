"""The documentation is tried, not just read.

- Every code block marked runnable (a fence opened with "```sh runnable"
  or "```python runnable") in README.md and docs/*.md is run (bash -e, or
  this tree's Python package), with `sandlock` on PATH being this build's,
  in a scratch directory: it must exit 0.  "fixture=NAME" fills the
  directory first with a small project (FIXTURES below: what a fresh user's
  C, Python, npm and pip projects look like); "needs=PROG" skips the block
  where PROG is not installed.  The README's first-sandbox section and
  recipes are such blocks: a new user's first session is this test.
- Every relative link in those pages names a file that exists, and every
  "#anchor" a heading (GitHub's slug) or an <a id> of that page.
- README.md stays a page (at most ~400 lines) and keeps `make test`, the
  command .ci/run runs.
"""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import asan_host

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\S*)(.*)$")


def blocks(path):
    """(info words, first line number, text) of each fenced block."""
    out, cur = [], None
    for n, line in enumerate(path.read_text().split("\n"), 1):
        m = FENCE.match(line)
        if m and cur is None:
            cur = (m.group(1), m.group(2).split(), n + 1, [])
        elif line.startswith("```") and cur is not None:
            out.append((cur[0], cur[1], cur[2], "\n".join(cur[3])))
            cur = None
        elif cur is not None:
            cur[3].append(line)
    assert cur is None, f"{path}: fence opened at line {cur[2] - 1} is never closed"
    return out


RUNNABLE = [(p, line, lang, words, text) for p in PAGES for lang, words, line, text in blocks(p)
            if "runnable" in words]

# What each fixture=NAME puts in the scratch directory.
FIXTURES = {
    # make + cc: the compiler's temporaries go to TMPDIR
    "c-project": {
        "Makefile": "app: main.o util.o\n\tcc -o $@ $^\nclean:\n\trm -f app *.o\n",
        "main.c": '#include <stdio.h>\nint twice(int);\n'
                  'int main(void) { printf("%d\\n", twice(21)); return 0; }\n',
        "util.c": "int twice(int x) { return 2 * x; }\n",
    },
    # pytest: tmp_path lives under TMPDIR, .pytest_cache in the project
    "py-project": {
        "test_app.py": "def test_tmp(tmp_path):\n    (tmp_path / 'f').write_text('x')\n"
                       "    assert (tmp_path / 'f').read_text() == 'x'\n",
    },
    # npm ci of a lockfile whose dependency is a local `npm pack` tarball
    # (no network; unlike a file:DIR link it goes through npm's cache);
    # the tarball and lockfile are made by npm_tarball() below
    "npm-project": {
        "package.json": '{"name": "app", "version": "1.0.0", '
                        '"dependencies": {"localdep": "file:./localdep-1.0.0.tgz"}}\n',
    },
    # pip install of a local package (offline)
    "pip-project": {
        "mypkg/setup.py": "from setuptools import setup\n"
                          "setup(name='mypkg', version='1.0', packages=['mypkg'])\n",
        "mypkg/mypkg/__init__.py": "ANSWER = 42\n",
    },
}


def npm_tarball(work):
    """localdep-1.0.0.tgz as `npm pack` makes it (files under package/) and
    the lockfile `npm install --package-lock-only` writes for it: made here,
    so the fixture needs neither npm nor a cache outside the project."""
    files = {"package/package.json": b'{"name": "localdep", "version": "1.0.0", '
                                     b'"main": "index.js"}\n',
             "package/index.js": b"module.exports = 42;\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    tgz = buf.getvalue()
    with open(os.path.join(work, "localdep-1.0.0.tgz"), "wb") as f:
        f.write(tgz)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    lock = {"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
            "packages": {"": {"name": "app", "version": "1.0.0",
                              "dependencies": {"localdep": "file:./localdep-1.0.0.tgz"}},
                         "node_modules/localdep": {"version": "1.0.0",
                                                   "resolved": "file:localdep-1.0.0.tgz",
                                                   "integrity": integrity}}}
    with open(os.path.join(work, "package-lock.json"), "w") as f:
        json.dump(lock, f, indent=2)


def fill(work, words):
    for w in words:
        if w.startswith("fixture="):
            for rel, text in FIXTURES[w.split("=", 1)[1]].items():
                path = os.path.join(work, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            if w == "fixture=npm-project":
                npm_tarball(work)


def test_some_blocks_are_runnable():
    # The README's first-sandbox section at least; a marker typo would
    # otherwise silently turn this whole test off.
    assert sum(1 for p, *_ in RUNNABLE if p.name == "README.md") >= 8
    for p, line, lang, words, _ in RUNNABLE:
        assert lang in ("sh", "python"), f"{p.name}:{line}: only sh and python blocks run"
        for w in words:
            if w.startswith("fixture="):
                assert w.split("=", 1)[1] in FIXTURES, f"{p.name}:{line}: no {w}"


@pytest.mark.parametrize("page,line,lang,words,text", RUNNABLE,
                         ids=[f"{p.name}:{n}" for p, n, *_ in RUNNABLE])
def test_runnable_block(page, line, lang, words, text):
    for w in words:
        if w.startswith("needs=") and not shutil.which(w[6:], path="/usr/local/bin:/usr/bin:/bin"):
            pytest.skip(f"{w[6:]} is not installed")
    bindir = tempfile.mkdtemp(prefix="sandlock-docs-bin-")
    work = tempfile.mkdtemp(prefix="sandlock-docs-", dir="/tmp")
    try:
        os.symlink(BUILD / "sandlock", os.path.join(bindir, "sandlock"))
        fill(work, words)
        # A fresh user's environment; the package from this tree for python blocks.
        env = {k: os.environ[k] for k in ("HOME", "USER", "LANG", "TERM") if k in os.environ}
        env["PATH"] = bindir + ":/usr/local/bin:/usr/bin:/bin"
        if lang == "python":
            env.update(PYTHONPATH=str(REPO / "python"),
                       SANDLOCK_LIB=os.environ.get("SANDLOCK_LIB", str(BUILD / "libsandlock.so")))
            asan_host(env)
        argv = (["bash", "-e", "-o", "pipefail", "-c", text] if lang == "sh"
                else ["/usr/bin/python3", "-c", text])
        r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, (
            f"{page.name}:{line}: exit {r.returncode}\n--- block\n{text}\n"
            f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")
    finally:
        shutil.rmtree(bindir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    text = path.read_text()
    fenced = set()
    for _, _, line, body in blocks(path):
        fenced.update(range(line, line + body.count("\n") + 1))
    out = set(re.findall(r'<a id="([^"]+)"', text))
    for n, line in enumerate(text.split("\n"), 1):
        if n not in fenced and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def test_links_resolve():
    bad = []
    for p in PAGES:
        text = p.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue        # http(s), mailto: not tried offline
            file, _, anchor = target.partition("#")
            dest = (p.parent / file).resolve() if file else p
            if not dest.exists():
                bad.append(f"{p.name}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{p.name}: {target}: no such anchor")
    assert not bad, "\n".join(bad)


def test_readme_is_a_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.split("\n")) <= 400
    assert "make test" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()
    for f in ("LICENSE", "CHANGELOG.md", "SECURITY.md"):
        assert (REPO / f).is_file(), f
    assert "Apache License" in (REPO / "LICENSE").read_text()
    assert not list(REPO.glob("shr*.txt"))


def test_man_page_lists_every_profile_key():
    """Every key the profile schema (src/profile/schema.c) accepts (not
    refused as unsupported) is listed under its own section in sandlock(1)'s
    PROFILES; fails when a key is added without documenting it."""
    table = (REPO / "src" / "profile" / "schema.c").read_text()
    keys = re.findall(r'\{ "(\w+)", "(\w+)", (v_\w+) \}', table)
    assert ("filesystem", "read", "v_paths") in keys  # the table was parsed
    man = (REPO / "man" / "sandlock.1").read_text()
    profiles = man.split(".SH PROFILES")[1].split("\n.SH ")[0]
    listed = {}
    for sec, line in re.findall(r"^\.B \[(\w+)\]\n(\.BR .*)$", profiles, re.M):
        listed.setdefault(sec, set()).update(re.findall(r"\b\w+\b", line))
    for sec, key, handler in keys:
        if handler != "v_unsupported":
            assert key in listed.get(sec, ()), f"[{sec}] {key} not in sandlock(1)"
