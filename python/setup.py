"""Build glue for pyproject.toml that setuptools' declarative config cannot
express: the version is read from include/sandlock.h (its one source), and
the in-tree build/libsandlock.so is copied next to the package so that an
installed package finds the library it was built with.  Without a build, the
package loads the installed libsandlock.so.1 (`make install`) at run time.

Set SANDLOCK_BUNDLE_LIB=0 to never bundle, or to a path to bundle that file.
"""
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def version():
    header = os.path.join(REPO, "include", "sandlock.h")
    with open(header, encoding="utf-8") as f:
        m = re.search(r'^#define SANDLOCK_VERSION "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("SANDLOCK_VERSION not found in %s" % header)
    return m.group(1)


def library_to_bundle():
    choice = os.environ.get("SANDLOCK_BUNDLE_LIB", "")
    if choice == "0":
        return None
    path = choice or os.path.join(REPO, "build", "libsandlock.so")
    if os.path.isfile(path):
        return path
    if choice:
        raise RuntimeError("SANDLOCK_BUNDLE_LIB=%s: no such file" % choice)
    return None


class BuildPy(build_py):
    def run(self):
        super().run()
        lib = library_to_bundle()
        if lib:
            dest = os.path.join(self.build_lib, "sandlock", "libsandlock.so")
            self.mkpath(os.path.dirname(dest))
            shutil.copyfile(lib, dest)
            os.chmod(dest, 0o755)


class MaybeBinary(Distribution):
    """A bundled native library makes the wheel platform-specific."""

    def has_ext_modules(self):
        return library_to_bundle() is not None


setup(version=version(), cmdclass={"build_py": BuildPy}, distclass=MaybeBinary)
