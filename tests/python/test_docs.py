"""The documentation is tried, not just read.

- Every shell code block marked runnable (a fence opened with
  "```sh runnable") in README.md and docs/*.md is run with bash -e, with
  `sandlock` on PATH being this build's, in an empty scratch directory: it
  must exit 0.
- Every relative link in those pages names a file that exists, and every
  "#anchor" a heading (GitHub's slug) or an <a id> of that page.
- README.md stays a page (at most ~400 lines) and keeps `make test`, the
  command .ci/run runs.
"""
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

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


RUNNABLE = [(p, line, text) for p in PAGES for lang, words, line, text in blocks(p)
            if "runnable" in words]


def test_some_blocks_are_runnable():
    # The README's first-sandbox section at least; a marker typo would
    # otherwise silently turn this whole test off.
    assert sum(1 for p, _, _ in RUNNABLE if p.name == "README.md") >= 3
    for p in PAGES:
        for lang, words, line, _ in blocks(p):
            if "runnable" in words:
                assert lang == "sh", f"{p.name}:{line}: only sh blocks can be runnable"


@pytest.mark.parametrize("page,line,text", RUNNABLE,
                         ids=[f"{p.name}:{n}" for p, n, _ in RUNNABLE])
def test_runnable_block(page, line, text):
    bindir = tempfile.mkdtemp(prefix="sandlock-docs-bin-")
    work = tempfile.mkdtemp(prefix="sandlock-docs-", dir="/tmp")
    try:
        os.symlink(BUILD / "sandlock", os.path.join(bindir, "sandlock"))
        env = dict(os.environ, PATH=bindir + ":/usr/local/bin:/usr/bin:/bin")
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env,
                           capture_output=True, text=True, timeout=300)
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
