"""The built-in tools of the sandlock MCP server (``python3 -m sandlock.mcp``).

Each runs inside its own per-call sandbox (sandlock.mcp.McpSandbox), so the
code here is ordinary Python: containment is the sandbox's job, not these
functions'.  Paths are taken relative to the workspace; an absolute path or
'..' is allowed through to the kernel, where the sandbox refuses what lies
outside.  This module must import nothing from sandlock (it runs in the
worker without the package).
"""
import os
import subprocess
import sys


def _path(workspace: str, path: str) -> str:
    return os.path.join(workspace, path)


def shell(command: str, *, workspace: str) -> str:
    """Run a shell command in the workspace; its output and exit status."""
    p = subprocess.run(["/bin/sh", "-c", command], cwd=workspace, capture_output=True,
                       text=True, errors="replace")
    text = p.stdout + p.stderr
    return text if p.returncode == 0 else "%s[exit status %d]" % (text, p.returncode)


def python(code: str, *, workspace: str) -> str:
    """Run Python code in the workspace; its output and exit status."""
    p = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True,
                       text=True, errors="replace")
    text = p.stdout + p.stderr
    return text if p.returncode == 0 else "%s[exit status %d]" % (text, p.returncode)


def read_file(path: str, *, workspace: str) -> str:
    """The text of a file of the workspace."""
    with open(_path(workspace, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def write_file(path: str, content: str, *, workspace: str) -> str:
    """Write text to a file of the workspace (parents are made)."""
    full = _path(workspace, path)
    os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(content)
    return "wrote %d bytes to %s" % (len(content.encode("utf-8")), path)


def list_files(path: str = ".", *, workspace: str) -> str:
    """The entries of a directory of the workspace, one per line (dirs end in /)."""
    base = _path(workspace, path)
    names = sorted(os.listdir(base))
    return "\n".join(n + "/" if os.path.isdir(os.path.join(base, n)) else n for n in names)
