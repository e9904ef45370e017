"""A fresh user's first session, as issue 23's "Done when" says: the
README's first-sandbox section, then a C build, a Python test run, an
`npm ci` of a lockfile with a local tarball dependency and a `pip install
--no-index` of a local package, each inside the sandbox with only the
project directory writable and no flag beyond those the README shows.

The commands are the README's own runnable blocks (test_docs.RUNNABLE,
in their order), run by an unprivileged user (uid 65534 when the suite
runs as root; `make test-unpriv` runs it as its own user) whose HOME holds
a private key, a ~/.npm nobody granted, and the projects.  Beyond each
block's exit status, what the user is left with is checked: the programs
built and installed work, the key stayed out of reach, nothing was
written in HOME outside the project, and no run left a directory behind
in TMPDIR.  test_docs runs the same blocks as the suite's user."""
import os
import shutil
import subprocess
import tempfile

import pytest
from conftest import asan_host
from test_docs import BUILD, REPO, RUNNABLE, fill

NOBODY = 65534
README = [(line, lang, words, text) for page, line, lang, words, text in RUNNABLE
          if page.name == "README.md"]
GRANTS = "-r /usr -r /lib -r /lib64 -r /bin -r /etc"


def has(prog):
    return shutil.which(prog, path="/usr/local/bin:/usr/bin:/bin") is not None


class User:
    """A scratch HOME, TMPDIR and PATH for a fresh user; as root, the
    commands run as uid/gid 65534 and everything is copied where it can
    read it (a checkout under /root is not)."""

    def __init__(self, root):
        self.root = root
        self.home, self.tmp, self.bin = (os.path.join(root, d) for d in ("home", "tmp", "bin"))
        for d in (self.home, self.tmp, self.bin):
            os.makedirs(d)
        shutil.copy2(BUILD / "sandlock", self.bin)   # as `make install` would
        shutil.copytree(REPO / "python" / "sandlock", os.path.join(root, "py", "sandlock"))
        self.lib = os.path.join(root, "libsandlock.so")
        shutil.copy2(os.environ.get("SANDLOCK_LIB", str(BUILD / "libsandlock.so")), self.lib)
        os.makedirs(os.path.join(self.home, ".ssh"))
        with open(os.path.join(self.home, ".ssh", "id_rsa"), "w") as f:
            f.write("PRIVATE KEY\n")
        self.switch = os.geteuid() == 0
        if self.switch:
            os.chmod(root, 0o755)
            for d, _, files in os.walk(root):
                for p in [d] + [os.path.join(d, f) for f in files]:
                    os.lchown(p, NOBODY, NOBODY)
        os.chmod(os.path.join(self.home, ".ssh", "id_rsa"), 0o600)

    def project(self, name, words):
        d = os.path.join(self.home, name)
        os.makedirs(d)
        fill(d, words)
        if self.switch:
            for top, dirs, files in os.walk(d):
                for p in [top] + [os.path.join(top, f) for f in dirs + files]:
                    os.lchown(p, NOBODY, NOBODY)
        return d

    def env(self, python):
        env = {"HOME": self.home, "TMPDIR": self.tmp, "LANG": "C.UTF-8",
               "USER": "nobody" if self.switch else os.environ.get("USER", "user"),
               "PATH": self.bin + ":/usr/local/bin:/usr/bin:/bin"}
        if python:   # the package, as `pip install ./python` would give it
            env.update(PYTHONPATH=os.path.join(self.root, "py"), SANDLOCK_LIB=self.lib)
            asan_host(env)
        return env

    def run(self, argv, cwd, python=False):
        if self.switch:
            argv = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                    "--clear-groups", *argv]
        return subprocess.run(argv, cwd=cwd, env=self.env(python), capture_output=True,
                              text=True, timeout=300)


@pytest.fixture
def user():
    root = tempfile.mkdtemp(prefix="sandlock-firsthour-", dir="/tmp")
    try:
        yield User(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_readme_is_the_session():
    # The README shows these; if it stops, this test no longer is the issue's.
    fixtures = {w for _, _, words, _ in README for w in words if w.startswith("fixture=")}
    assert fixtures >= {"fixture=c-project", "fixture=py-project", "fixture=npm-project",
                        "fixture=pip-project"}
    text = (REPO / "README.md").read_text()
    assert text.count(GRANTS) >= 8 and "--no-index" in text


def test_a_fresh_users_first_hour(user):
    # The README's "cat ~/.ssh/id_rsa" example: refused, and said why.
    r = user.run(["sandlock", "run", *GRANTS.split(), "--", "cat",
                  os.path.join(user.home, ".ssh", "id_rsa")], cwd=user.home)
    assert r.returncode == 1 and "Permission denied" in r.stderr and "PRIVATE" not in r.stdout
    assert "allow with -r " + os.path.join(user.home, ".ssh") in r.stderr, r.stderr
    # The probe itself works for this user outside the sandbox.
    assert user.run(["cat", os.path.join(user.home, ".ssh", "id_rsa")],
                    cwd=user.home).stdout == "PRIVATE KEY\n"
    done = set()
    for n, (line, lang, words, text) in enumerate(README):
        needs = [w[6:] for w in words if w.startswith("needs=")]
        if not all(has(p) for p in needs):
            continue
        work = user.project("p%d" % n, words)
        argv = (["bash", "-e", "-o", "pipefail", "-c", text] if lang == "sh"
                else ["/usr/bin/python3", "-c", text])
        r = user.run(argv, cwd=work, python=lang == "python")
        assert r.returncode == 0, (
            f"README.md:{line} as uid {os.geteuid() if not user.switch else NOBODY}: exit "
            f"{r.returncode}\n--- block\n{text}\n--- stdout\n{r.stdout[-3000:]}\n"
            f"--- stderr\n{r.stderr[-3000:]}")
        done.update(w[8:] for w in words if w.startswith("fixture="))
        check_project(user, work, words, text)
        # Nothing in HOME but the projects and the key (no ~/.npm, ~/.cache);
        # no run's directory left in TMPDIR (the Python block's own
        # mkdtemp() workspace is the user's).
        projects = [p for p in os.listdir(user.home) if p.startswith("p")]
        assert sorted(os.listdir(user.home)) == sorted([".ssh"] + projects), line
        left = [e for e in os.listdir(user.tmp) if e.startswith("sandlock")]
        assert left == [], f"README.md:{line} left {left} in TMPDIR"
    want = {"c-project", "py-project", "pip-project"} | ({"npm-project"} if has("npm") else set())
    assert done >= want


def check_project(user, work, words, text):
    """What the block's job left is what the user wanted."""
    if "fixture=c-project" in words:   # each such block ends with a real build
        assert user.run(["./app"], cwd=work).stdout == "42\n"
    if "fixture=py-project" in words:
        assert os.path.isdir(os.path.join(work, ".pytest_cache"))
    if "fixture=npm-project" in words:
        r = user.run(["node", "-e", "console.log(require('localdep'))"], cwd=work)
        assert r.stdout == "42\n", r.stderr
        assert not os.path.islink(os.path.join(work, "node_modules", "localdep"))
    if "fixture=pip-project" in words:
        r = user.run([".venv/bin/python", "-c", "import mypkg; print(mypkg.ANSWER)"], cwd=work)
        assert r.stdout == "42\n", r.stderr
