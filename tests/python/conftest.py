"""Shared fixtures for the sandlock Python tests (pytest)."""
import os
import shutil
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import sandlock  # noqa: E402

# What a dynamically linked /bin/cat or /usr/bin/python3 needs to start.
SYSTEM = ["/usr", "/lib", "/lib64", "/bin", "/etc"]
PY = "/usr/bin/python3"


def alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before / while reading
        return False


@pytest.fixture
def tmpdir_path():
    d = tempfile.mkdtemp(prefix="sandlock-pytest-", dir="/tmp")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def sb():
    return sandlock.Sandbox(fs_readable=SYSTEM, timeout=60)


@pytest.fixture
def host_hostname():
    with open("/etc/hostname", "rb") as f:
        return f.read()
