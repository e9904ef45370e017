"""Every flag the CLI names in a message or hint (--trace's "allow with
...", error fixes, the refusal of a reference option) is a flag the tool
accepts: a mechanical check of cli/*.c's string literals against the
option table as --help prints it (--net-allow-unix, which does not exist,
was once suggested)."""
import re
from pathlib import Path

from test_cli import sandlock

CLI = Path(__file__).resolve().parents[2] / "cli"
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def accepted():
    text = "".join(sandlock(*a).stdout for a in (["--help"], ["run", "--help"], ["learn", "--help"]))
    return set(FLAG.findall(text))


def test_every_flag_named_in_cli_strings_is_accepted():
    ok = accepted()
    assert "--fs-read" in ok and "--allow-unix" in ok and "--tmp" in ok
    bad = []
    for src in sorted(CLI.glob("*.c")):
        for n, line in enumerate(src.read_text().split("\n"), 1):
            if line.lstrip().startswith(("/*", "*", "//")):
                continue                     # comments may quote anything
            for lit in LITERAL.findall(line):
                for flag in FLAG.findall(lit):
                    if flag not in ok:
                        bad.append(f"{src.name}:{n}: {flag}")
    assert not bad, "flags the tool does not accept:\n" + "\n".join(bad)
