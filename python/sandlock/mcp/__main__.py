"""python3 -m sandlock.mcp [--workspace DIR] [--transport stdio|sse --host H --port P]

An MCP server whose tools (shell, python, read_file, write_file,
list_files) each run in a fresh sandbox confined to the workspace,
without network.  shell, python and write_file may write in the
workspace; read_file and list_files only read it.
"""
import argparse
import os
import sys
from typing import List, Optional

from . import McpSandbox, tools
from .server import Server, make_http_server, serve_stdio

_WRITERS = ("shell", "python", "write_file")


def build(workspace: str, timeout: float) -> McpSandbox:
    """The server's McpSandbox with the built-in tools."""
    os.makedirs(workspace, exist_ok=True)
    mcp = McpSandbox(workspace=workspace, timeout=timeout)
    ws = mcp.workspace
    for name in ("shell", "python", "read_file", "write_file", "list_files"):
        caps = {"fs_writable": [ws]} if name in _WRITERS else None
        mcp.add_tool(name, getattr(tools, name), capabilities=caps)
    return mcp


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="sandlock-mcp", description=__doc__.split("\n\n")[1],
                                allow_abbrev=False)
    p.add_argument("--workspace", default="/tmp/sandlock",
                   help="the directory the tools work in (default: /tmp/sandlock)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds a tool call may run (default: 30)")
    p.add_argument("--transport", choices=("stdio", "sse"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="address for --transport sse")
    p.add_argument("--port", type=int, default=8080, help="port for --transport sse")
    a = p.parse_args(argv)
    server = Server(build(a.workspace, a.timeout))
    if a.transport == "stdio":
        serve_stdio(server)
        return 0
    httpd = make_http_server(server, a.host, a.port)
    host, port = httpd.server_address[:2]
    print("sandlock-mcp: serving on http://%s:%d/sse" % (str(host), port),
          file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
