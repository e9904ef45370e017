"""`pip install ./python` (offline, --no-build-isolation, Debian's setuptools):
the installed package imports from outside the checkout, finds its library
(bundled, or the installed libsandlock.so.1 by SONAME) and runs a command."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import asan_host

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
LIB = BUILD / "libsandlock.so"
PY = "/usr/bin/python3"
VERSION = re.search(r'#define SANDLOCK_VERSION "([^"]+)"',
                    (REPO / "include" / "sandlock.h").read_text()).group(1)

PROBE = r"""
import importlib.metadata, json, os, sandlock, sandlock._native as n
sb = sandlock.Sandbox(fs_readable=[d for d in ("/usr", "/bin", "/lib", "/lib64") if os.path.exists(d)])
r = sb.run(["/bin/echo", "installed"])
print(json.dumps({"file": sandlock.__file__, "lib": n.LIB_PATH, "version": sandlock.__version__,
                  "meta": importlib.metadata.version("sandlock"), "out": r.stdout.decode(),
                  "code": r.exit_code}))
"""


def pip_install(tmp_path, bundle):
    """Install a copy of python/ (+ the header it reads) into tmp_path/site."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "python", src / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    (src / "include").mkdir()
    shutil.copy(REPO / "include" / "sandlock.h", src / "include")
    site = tmp_path / "site"
    env = dict(os.environ, SANDLOCK_BUNDLE_LIB=bundle, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(site), str(src / "python")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return site


def probe(site, tmp_path, **env_extra):
    import json
    env = {k: v for k, v in os.environ.items() if k not in ("SANDLOCK_LIB", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), **env_extra)
    asan_host(env)
    r = subprocess.run([PY, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_pip_install_bundles_the_library(tmp_path):
    site = pip_install(tmp_path, str(LIB))
    assert (site / "sandlock" / "py.typed").is_file()
    assert (site / "sandlock" / "profile.py").is_file()
    got = probe(site, tmp_path)
    assert got["file"] == str(site / "sandlock" / "__init__.py")
    assert got["lib"] == str(site / "sandlock" / "libsandlock.so")
    assert got["version"] == got["meta"] == VERSION
    assert got["out"] == "installed\n" and got["code"] == 0


@pytest.fixture(scope="module")
def unbundled(tmp_path_factory):
    return pip_install(tmp_path_factory.mktemp("unbundled"), "0")


def test_unbundled_package_loads_the_installed_library_by_soname(tmp_path, unbundled):
    site = unbundled
    assert not (site / "sandlock" / "libsandlock.so").exists()
    libdir = tmp_path / "lib"
    libdir.mkdir()
    (libdir / "libsandlock.so.1").symlink_to(LIB)
    got = probe(site, tmp_path, LD_LIBRARY_PATH=str(libdir))
    assert got["lib"] == "libsandlock.so.1"
    assert got["out"] == "installed\n" and got["version"] == VERSION


def test_unbundled_package_without_a_library_fails_to_import_clearly(tmp_path, unbundled):
    site = unbundled
    env = {k: v for k, v in os.environ.items() if k not in ("SANDLOCK_LIB", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), LD_LIBRARY_PATH=str(tmp_path / "none"))
    asan_host(env)
    r = subprocess.run([PY, "-c", "import sandlock"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    if subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True,
                      text=True).stdout.count("libsandlock.so.1"):
        pytest.skip("a libsandlock.so.1 is installed system-wide")
    assert r.returncode != 0
    assert "cannot find libsandlock.so" in r.stderr
    assert "libsandlock.so.1 (installed, by SONAME)" in r.stderr


def test_version_has_one_source():
    import sandlock
    assert sandlock.__version__ == VERSION
    pyproject = (REPO / "python" / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject
    assert not re.search(r"^version\s*=", pyproject, re.M)


def test_public_api_is_annotated():
    import typing
    import sandlock
    from sandlock import profile
    checks = [sandlock.Sandbox.__init__, sandlock.Sandbox.run,
              sandlock.Sandbox.run_with_handlers, sandlock.parse_memory_size,
              sandlock.landlock_abi_version, profile.load_profile, profile.list_profiles,
              profile.read_profile, profile.profiles_dir]
    for fn in checks:
        # The function's own module, and the package for names a module
        # imports only for type checking (profile's "Sandbox").
        names = dict(vars(sandlock), **vars(sys.modules[fn.__module__]))
        hints = typing.get_type_hints(fn, globalns=names)
        params = [p for p in __import__("inspect").signature(fn).parameters
                  if p not in ("self", "overrides")]
        assert "return" in hints, fn
        missing = [p for p in params if p not in hints]
        assert not missing, (fn, missing)
    assert (REPO / "python" / "sandlock" / "py.typed").is_file()
