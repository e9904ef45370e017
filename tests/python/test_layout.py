"""The source layout docs/architecture.md describes holds.

- No call circle between files: file A uses file B when A names a
  function that B alone defines (not static); no two files of src/ and
  cli/ may reach each other that way (a helper both sides need goes to a
  leaf below them, or the caller does the step itself).  Read as text:
  comments, strings and struct/union/enum tags are not names of calls.
- Every source file opens with a comment saying why it exists.
- No file under src/ or cli/ is over 700 lines (issue 24), except the ones
  still being split (SPLITTING).
- No import circle between the modules of the Python package: every
  import counts (module level, inside a function, under TYPE_CHECKING),
  so a lower module never reaches back up (sandbox.py's run modules use
  the Sandbox through the SandboxLike protocol of _run.py).
- docs/architecture.md stays true: it places every file of src/ and
  cli/, names no file that does not exist, and its table of which
  sub-system includes which is the one the #include lines make.
"""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "src", REPO / "cli"]
PACKAGE = REPO / "python" / "sandlock"
MAX_LINES = 700
# Files over the limit that are being split now: take a file off this list
# when its split lands.
SPLITTING = set()

# Comments, string and character literals (replaced by a blank).
NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
TAG = re.compile(r"\b(?:struct|union|enum)\s+\w+")
# A function definition: at the start of a line, a name, its parameters, "{".
DEFINITION = re.compile(r"^([A-Za-z_][^\n(;{}=]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)
NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def sources(suffixes=(".c",)):
    return sorted(p for root in ROOTS for p in root.rglob("*") if p.suffix in suffixes)


def rel(p):
    return str(Path(p).relative_to(REPO))


def code(path):
    return TAG.sub(" ", NOISE.sub(" ", path.read_text(errors="replace")))


def call_graph(files):
    """{file: the other files whose functions it names}."""
    text = {f: code(f) for f in files}
    owners = {}
    for f, t in text.items():
        for m in DEFINITION.finditer(t):
            if "static" not in m.group(1).split():
                owners.setdefault(m.group(2), set()).add(f)
    # A name defined in two files (main of two programs) ties neither.
    owner = {n: next(iter(fs)) for n, fs in owners.items() if len(fs) == 1}
    return {f: {owner[n] for n in set(NAME.findall(t)) if owner.get(n, f) != f}
            for f, t in text.items()}


def circles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_circle_check_sees_a_circle(tmp_path):
    """The check itself: a circle of three files through one call each
    (and a header shared by all, as proxyint.h) is found; a chain is not."""
    files = {
        "a.c": '#include "int.h"\n/* c_go() */\nint a_go(void)\n{\n\treturn b_go();\n}\n',
        "b.c": '#include "int.h"\nstatic int own(void) { return 0; }\n'
               "int b_go(void)\n{\n\treturn c_go() + own();\n}\n",
        "c.c": '#include "int.h"\nstruct a_go;\nint c_go(void)\n{\n\treturn 1;\n}\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = sorted(tmp_path.glob("*.c"))
    assert circles(call_graph(paths)) == []
    (tmp_path / "c.c").write_text(files["c.c"].replace("return 1;", "return a_go();"))
    assert circles(call_graph(paths)) == [paths]


def test_no_circle_between_files():
    graph = call_graph(sources())
    assert sum(len(v) for v in graph.values()) > 300  # the calls were found
    found = circles(graph)
    assert not found, "files that reach each other (move the helper both use to a leaf):\n" + \
        "\n".join(" <-> ".join(rel(p) for p in comp) for comp in found)


def test_every_file_says_why_it_exists():
    bare = [rel(p) for p in sources((".c", ".h")) if not p.read_text().lstrip().startswith("/*")]
    assert not bare, f"open with a comment saying why the file exists: {bare}"


@pytest.mark.parametrize("path", [p for p in sources((".c", ".h")) if rel(p) not in SPLITTING],
                         ids=rel)
def test_file_size(path):
    n = path.read_text(errors="replace").count("\n")
    assert n <= MAX_LINES, f"{rel(path)}: {n} lines (at most {MAX_LINES}: split it by sections)"


def module_of(pkg_dir, path):
    """The dotted name of a module file under the package (a package is
    its __init__.py)."""
    parts = list(path.relative_to(pkg_dir.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(pkg_dir):
    """{module: the package modules it imports}, from every import
    statement wherever it stands.  ``from . import name`` reaches the
    submodule name when there is one, else the package's __init__ (the
    name is one of its attributes); ``from .x import y`` reaches x, and
    x.y too when y is a submodule."""
    files = {module_of(pkg_dir, p): p for p in sorted(pkg_dir.rglob("*.py"))}
    graph = {}
    for mod, path in files.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level == 0:
                base = node.module or ""
            elif node.module:
                base = base + "." + node.module
            subs = {base + "." + a.name for a in node.names} & files.keys()
            found.update(subs)
            if node.module or len(subs) < len(node.names):
                found.add(base)
        graph[mod] = {m for m in found if m in files and m != mod}
    return graph


def test_import_circle_check_sees_a_circle(tmp_path):
    """The check itself: a function-level ``from . import`` and a
    TYPE_CHECKING import close a circle; a name taken from the package's
    __init__ reaches it; a chain is no circle."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .top import Top\n")
    (pkg / "top.py").write_text("from . import low\nfrom .low import f\nclass Top: pass\n")
    (pkg / "low.py").write_text("import os\ndef f():\n    return os.sep\n")
    assert circles(import_graph(pkg)) == []
    (pkg / "low.py").write_text("def f():\n    from . import top\n    return top\n")
    assert circles(import_graph(pkg)) == [["pkg.low", "pkg.top"]]
    (pkg / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from .top import Top\n")
    assert circles(import_graph(pkg)) == [["pkg.low", "pkg.top"]]
    (pkg / "low.py").write_text("def f():\n    from . import Top\n    return Top\n")
    assert circles(import_graph(pkg)) == [["pkg", "pkg.low", "pkg.top"]]


def test_no_import_circle_in_the_python_package():
    graph = import_graph(PACKAGE)
    assert {"sandlock.sandbox", "sandlock._process", "sandlock.mcp"} <= set(graph)
    assert "sandlock._process" in graph["sandlock.sandbox"]  # the imports were found
    found = circles(graph)
    assert not found, "modules that import each other (a lower module takes what it needs " \
        "as an argument or from a module below both):\n" + \
        "\n".join(" <-> ".join(comp) for comp in found)


ARCH = REPO / "docs" / "architecture.md"
# A source file's name as the page writes it: "cow/cow.c", "launch.h", "cli/oci/spec.c".
FILE_NAME = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[ch])\b")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Files every sub-system may include: left out of the include table.
LEAVES = {"util", "syscalls", "trap", "prng", "compat"}


def arch_text():
    """architecture.md without its C examples (they show a made-up builtin)."""
    return re.sub(r"```c\n.*?```", "", ARCH.read_text(), flags=re.S)


def named_in(path, names):
    """Whether one of names is path's name (its basename, or a path it ends with)."""
    r = rel(path)
    return any(r == n or r.endswith("/" + n) for n in names)


def test_architecture_places_every_file():
    """A .c is named; a .h is named or its .c is (one mechanism, one header)."""
    names = set(FILE_NAME.findall(arch_text()))
    unplaced = [rel(p) for p in sources((".c", ".h"))
                if not named_in(p, names) and not (p.suffix == ".h" and p.with_suffix(".c").exists()
                                                   and named_in(p.with_suffix(".c"), names))]
    assert not unplaced, f"docs/architecture.md does not place: {unplaced}"


def test_architecture_names_only_files_that_exist():
    tree = [p for d in ("src", "cli", "include", "tests", "bench", "go")
            for p in (REPO / d).rglob("*") if p.suffix in (".c", ".h")]
    gone = [n for n in sorted(set(FILE_NAME.findall(arch_text())))
            if not any(named_in(p, [n]) for p in tree)]
    assert not gone, f"docs/architecture.md names files that do not exist: {gone}"


def include_node(path, root):
    """The row of the include table a file belongs to: its sub-system's
    folder ("net/", "cli/oci/"), or a file of src/ itself that is not a
    leaf (config.h, check.c); None for a leaf and for sandlock.h."""
    parts = path.relative_to(root).parts
    if parts[0] == "cli":
        return "cli/oci/" if parts[1] == "oci" else "cli/"
    if parts[0] != "src":
        return None
    if len(parts) == 2:
        return None if path.stem in LEAVES else path.name
    return parts[1] + "/"


def include_table(root):
    """{row: the other rows whose headers its files include}, from the
    #include lines of src/ and cli/ under root (a quoted name is looked
    for beside the file first, as the compiler does)."""
    table = {}
    for top in ("src", "cli"):
        for p in sorted((root / top).rglob("*")):
            if p.suffix not in (".c", ".h"):
                continue
            for inc in INCLUDE.findall(p.read_text(errors="replace")):
                target = next((d / inc for d in (p.parent, root / "src", root / "cli",
                                                 root / "include") if (d / inc).is_file()), None)
                here = include_node(p, root)
                there = include_node(target, root) if target else None
                if here and there and here != there:
                    table.setdefault(here, set()).add(there)
    return table


def documented_include_table():
    text = ARCH.read_text()
    block = text.split("### Which sub-system includes which", 1)[1].split("```", 2)[1]
    return {row.split()[0]: set(row.split()[1:]) for row in block.strip().splitlines()}


def test_include_table_sees_a_new_dependency(tmp_path):
    """The check itself: a leaf and sandlock.h make no row; a header of
    another folder, reached from a .c or through a header, does."""
    for name, text in {
        "src/util.h": "/* leaf */\n",
        "src/a/a.h": '#include "util.h"\n#include "sandlock.h"\n',
        "src/a/a.c": '#include "a/a.h"\n',
        "src/b/b.c": '#include "b.h"\n',
        "src/b/b.h": '#include "a/a.h"\n',
        "cli/main.c": '#include "sandlock.h"\n',
        "include/sandlock.h": "\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert include_table(tmp_path) == {"b/": {"a/"}}
    (tmp_path / "cli/main.c").write_text('#include "b/b.h"\n')
    assert include_table(tmp_path) == {"b/": {"a/"}, "cli/": {"b/"}}


def test_architecture_include_table_is_the_real_one():
    real = include_table(REPO)
    assert {"builtins/", "supervisor/", "cow/", "net/"} <= set(real)  # the includes were read
    drawn = documented_include_table()
    diff = [f"{row}: the code includes {' '.join(sorted(real.get(row, set())))}; "
            f"the page says {' '.join(sorted(drawn.get(row, set())))}"
            for row in sorted(set(real) | set(drawn)) if real.get(row) != drawn.get(row)]
    assert not diff, "docs/architecture.md's include table is out of date:\n" + "\n".join(diff)
