"""Generated projects for the workload suite and `make bench`.

Each function writes a small but real project under a directory: a C
project built by make, a Python package pip can install, a test suite
pytest runs.  They are the same for the tests (results compared bare vs
sandboxed) and the benchmark (times compared), so both speak of one
workload.
"""
import os
import textwrap


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


C_MODULES = 70  # the "make -j2 of 60-80 files"


def c_project(top, modules=C_MODULES):
    """A C program of `modules` translation units in src/, a shared header
    per group of ten, and a Makefile with an object per unit in obj/ and
    a final link; `make` prints nothing the compare depends on, `./app`
    prints a checksum of every module's function."""
    for g in range((modules + 9) // 10):
        write(os.path.join(top, "include", "group%d.h" % g),
              "".join("int mod%d(int x);\n" % i
                      for i in range(g * 10, min(modules, g * 10 + 10))))
    for i in range(modules):
        body = "\n".join("    for (int k%d = 0; k%d < %d; k%d++) acc = acc * 31 + k%d + x;"
                         % (j, j, 3 + j, j, j) for j in range(8))
        write(os.path.join(top, "src", "mod%d.c" % i), textwrap.dedent("""\
            #include <stdio.h>
            #include <string.h>
            #include "group%d.h"
            static const char tag[] = "module %d";
            int mod%d(int x)
            {
                int acc = (int)strlen(tag);
            %s
                return acc ^ %d;
            }
            """) % (i // 10, i, i, body, i))
    calls = "\n".join("    sum = sum * 7 + (unsigned)mod%d(%d);" % (i, i) for i in range(modules))
    includes = "".join('#include "group%d.h"\n' % g for g in range((modules + 9) // 10))
    write(os.path.join(top, "src", "main.c"),
          "#include <stdio.h>\n%sint main(void)\n{\n    unsigned sum = 0;\n%s\n"
          "    printf(\"%%u\\n\", sum);\n    return 0;\n}\n" % (includes, calls))
    write(os.path.join(top, "Makefile"), textwrap.dedent("""\
        CC ?= cc
        CFLAGS = -O1 -Iinclude
        SRC := $(wildcard src/*.c)
        OBJ := $(patsubst src/%.c,obj/%.o,$(SRC))
        app: $(OBJ)
        \t$(CC) -o $@ $^
        obj/%.o: src/%.c $(wildcard include/*.h)
        \t@mkdir -p obj
        \t$(CC) $(CFLAGS) -c $< -o $@
        clean:
        \trm -rf obj app
        """))
    return top


def py_package(top, name="wlpkg", modules=20):
    """A setuptools package (pyproject.toml + setup.cfg-free setup.py) with
    `modules` modules and a console script."""
    write(os.path.join(top, "pyproject.toml"), textwrap.dedent("""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        """))
    write(os.path.join(top, "setup.py"), textwrap.dedent("""\
        from setuptools import setup
        setup(name=%r, version="1.0", packages=[%r],
              entry_points={"console_scripts": ["%s-hello = %s.m0:hello"]})
        """) % (name, name, name, name))
    write(os.path.join(top, name, "__init__.py"), "VERSION = '1.0'\n")
    for i in range(modules):
        write(os.path.join(top, name, "m%d.py" % i), textwrap.dedent("""\
            def value():
                return %d * %d

            def hello():
                print("hello from m%d", value())
            """) % (i, i, i))
    return top


def pytest_project(top, files=30, tests=10):
    """A package and `files` test modules of `tests` tests each (some
    parametrised, one fixture using tmp_path), all passing."""
    write(os.path.join(top, "calc", "__init__.py"), textwrap.dedent("""\
        def add(a, b):
            return a + b

        def fib(n):
            a, b = 0, 1
            for _ in range(n):
                a, b = b, a + b
            return a
        """))
    write(os.path.join(top, "conftest.py"), "import sys, os\n"
          "sys.path.insert(0, os.path.dirname(__file__))\n")
    for f in range(files):
        cases = "\n".join(textwrap.dedent("""\
            def test_add_%d():
                assert calc.add(%d, %d) == %d
            """) % (t, f, t, f + t) for t in range(tests))
        write(os.path.join(top, "tests", "test_m%02d.py" % f), textwrap.dedent("""\
            import pytest
            import calc

            @pytest.mark.parametrize("n,want", [(0, 0), (1, 1), (10, 55), (20, 6765)])
            def test_fib(n, want):
                assert calc.fib(n) == want

            def test_tmp(tmp_path):
                p = tmp_path / "f.txt"
                p.write_text("x" * %d)
                assert p.read_text() == "x" * %d

            """) % (f, f) + cases)
    return top


GIT_ID = ["-c", "user.email=bench@example.invalid", "-c", "user.name=bench"]
# What the git workload runs in the project: a file:// clone of its bare
# "remote", a commit, a push back, and a gc of the clone.
# (GIT_CONFIG_GLOBAL: the user's ~/.gitconfig is not granted; git refuses
# to run on a configuration file it cannot read.  --no-hardlinks: in a
# COW workdir a link's inode is a new one, which a local clone refuses,
# docs/cow-chroot.md.)
GIT_SCRIPT = ("export GIT_CONFIG_GLOBAL=/dev/null; "
              "git clone -q --no-hardlinks remote.git work && cd work && "
              "echo change >> src/main.c && "
              "git %s commit -qam change && git push -q origin HEAD && git gc -q"
              % " ".join(GIT_ID))


def git_project(top):
    """A bare repository remote.git (the C project, committed) next to
    which the workload clones, commits, pushes and gcs (GIT_SCRIPT)."""
    import subprocess
    seed = os.path.join(top, "seed")
    c_project(seed)
    for cmd in (["init", "-q", "-b", "main", seed], ["-C", seed, "add", "."],
                ["-C", seed, *GIT_ID, "commit", "-qm", "first"],
                ["clone", "-q", "--bare", seed, os.path.join(top, "remote.git")]):
        subprocess.run(["git", *cmd], check=True, capture_output=True)
    return top
