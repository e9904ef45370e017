"""Under `make asan` only (conftest.asan_host puts this directory on the
PYTHONPATH of host-side Pythons that import sandlock): the sanitizer
runtimes were preloaded into this interpreter so that they come first;
the programs it starts, sandboxed or not, must not load them too."""
import os

os.environ.pop("LD_PRELOAD", None)
