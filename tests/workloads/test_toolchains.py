"""Toolchains on a project directory: make/cc, pytest, pip, a bash script.
Each runs bare, sandboxed (-w DIR) and in a COW workdir (--workdir DIR,
committed), and must leave the same results and the same tree."""
import os
import shutil

import projects
import wl

PY = "/usr/bin/python3"


def test_make_c_project(tmp_path):
    wl.need("make", "cc")
    got = wl.workload("make -j2 (C)", tmp_path, ["sh", "-c", "make -j2 -s && ./app"],
                      setup=projects.c_project)
    assert got["bare"][1].strip().isdigit()
    assert "obj/mod69.o" in got["cow"][2] and "app" in got["cow"][2]


def test_pytest_of_a_small_project(tmp_path):
    got = wl.workload("pytest", tmp_path, [PY, "-m", "pytest", "-q", "-p", "no:randomly"],
                      setup=projects.pytest_project, skip=("tmp",),
                      output=lambda r, d: r.stdout.strip().splitlines()[-1].split(" in ")[0])
    assert got["bare"][1] == "450 passed"
    assert any(k.startswith(".pytest_cache") for k in got["cow"][2])


def test_pip_install_of_a_local_package(tmp_path):
    # --no-build-isolation: PyPI is not reachable, setuptools comes from the system
    argv = [PY, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
            "--no-deps", "--no-cache-dir", "--target", "site", "./pkg"]
    script = "%s && PYTHONPATH=site %s -c 'import wlpkg.m7; print(wlpkg.m7.value())' " \
             "&& PYTHONPATH=site site/bin/wlpkg-hello" % (" ".join(argv), PY)
    got = wl.workload("pip install", tmp_path, ["sh", "-c", script],
                      setup=lambda d: projects.py_package(str(d / "pkg")),
                      env={"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
                      skip=("build", "__pycache__", "RECORD"))
    assert got["bare"][1].split() == ["49", "hello", "from", "m0", "0"]
    assert "site/wlpkg/m19.py" in got["cow"][2]


BASH_SCRIPT = r'''
set -euo pipefail
seq 1 200000 | awk '{print ($1 * 7919) % 100003}' > numbers.txt
sort -n numbers.txt > sorted.txt &
sort -rn numbers.txt | head -5 > top.txt &
wait
tmp=$(mktemp)
grep -c . sorted.txt > "$tmp"
echo "noise" > /dev/null
mkdir -p out && cp "$tmp" out/count && rm -f "$tmp"
tar czf out/archive.tgz sorted.txt top.txt
tar tzf out/archive.tgz | sort > out/list
gzip -c sorted.txt | gunzip | md5sum | cut -d' ' -f1
cat top.txt out/count out/list
'''


def test_bash_script_jobs_pipes_mktemp_sort_tar(tmp_path):
    got = wl.workload("bash script", tmp_path, ["bash", "-c", BASH_SCRIPT],
                      skip=("archive.tgz",))  # gzip stores the mtime
    lines = got["bare"][1].split()
    assert len(lines) == 9 and lines[6] == "200000" and lines[7:] == ["sorted.txt", "top.txt"]
    assert "out/archive.tgz" not in got["cow"][2] and "out/count" in got["cow"][2]


def npm_setup(d):
    """Two local packages packed with `npm pack` (lib-b requires lib-a) and
    an app that depends on both tarballs."""
    import json
    import subprocess
    src = d / "src"
    for name, body in (("lib-a", "exports.twice = x => 2 * x;\n"),
                       ("lib-b", "const a = require('lib-a');\n"
                                 "exports.quad = x => a.twice(a.twice(x));\n")):
        p = src / name
        p.mkdir(parents=True)
        (p / "package.json").write_text(json.dumps({"name": name, "version": "1.0.0",
                                                    "main": "index.js"}))
        (p / "index.js").write_text(body)
        subprocess.run(["npm", "pack", "-q", "--pack-destination", str(d)], cwd=p, check=True,
                       capture_output=True, env=dict(os.environ, npm_config_cache=str(d / ".c")))
    shutil.rmtree(d / ".c", ignore_errors=True)
    shutil.rmtree(src)
    (d / "package.json").write_text(json.dumps({
        "name": "app", "version": "1.0.0", "private": True,
        "dependencies": {"lib-a": "file:lib-a-1.0.0.tgz", "lib-b": "file:lib-b-1.0.0.tgz"}}))
    (d / "app.js").write_text("console.log(require('lib-b').quad(5));\n")


def test_npm_install_from_local_tarballs(tmp_path):
    wl.need("npm", "node")
    # npm's cache and logs go to the run's TMPDIR (HOME there too): offline,
    # nothing from the registry.
    script = 'export HOME="$TMPDIR" npm_config_cache="$TMPDIR/npm-cache" && ' \
             'npm install --offline --no-audit --no-fund --loglevel=error >/dev/null && node app.js'
    got = wl.workload("npm install", tmp_path, ["sh", "-c", script], setup=npm_setup)
    assert got["bare"][1] == "20\n"
    assert "node_modules/lib-b/index.js" in got["cow"][2] and "package-lock.json" in got["cow"][2]
