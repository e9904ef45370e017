import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import wl  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    lines = wl.ratios()
    if lines:
        terminalreporter.write_sep("-", "workload wall time, sandboxed / bare (one run each)")
        for line in lines:
            terminalreporter.write_line(line)
    out = os.environ.get("WORKLOAD_TIMES")
    if out:
        wl.dump_json(out)
