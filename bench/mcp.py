"""MCP tool calls (`make bench`): the round trip of one tools/call through
the stdio server (a fresh sandbox per call) and McpSandbox.call_tool_sync,
against a bare subprocess running the same worker and tool unconfined.
Interleaved; medians of REPS.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPS = int(os.environ.get("BENCH_MCP_REPS", os.environ.get("BENCH_REPS", "15")))
PY = "/usr/bin/python3"


def _server(ws):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    p = subprocess.Popen([PY, "-m", "sandlock.mcp", "--workspace", ws], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18"}}) + "\n")
    p.stdout.readline()
    return p


def figures():
    sys.path.insert(0, str(REPO / "python"))
    from sandlock.mcp import McpSandbox, _WORKER, tools

    ws = tempfile.mkdtemp(prefix="bench-mcp-")
    with open(os.path.join(ws, "f.txt"), "w") as f:
        f.write("x" * 100)
    mcp = McpSandbox(workspace=ws)
    mcp.add_tool("read_file", tools.read_file)
    req = os.path.join(ws, "req.json")
    with open(req, "w") as f:
        json.dump({"module": "t", "file": tools.__file__, "function": "read_file",
                   "arguments": {"path": "f.txt"}, "workspace": ws, "takes_workspace": True}, f)
    srv = _server(ws)
    times = {"bare": [], "api": [], "server": []}
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "read_file", "arguments": {"path": "f.txt"}}}) + "\n"
    try:
        for _ in range(REPS):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-I", _WORKER, req], check=True,
                           stdout=subprocess.DEVNULL)
            times["bare"].append(time.perf_counter() - t)
            t = time.perf_counter()
            mcp.call_tool_sync("read_file", {"path": "f.txt"})
            times["api"].append(time.perf_counter() - t)
            t = time.perf_counter()
            srv.stdin.write(call)
            srv.stdout.readline()
            times["server"].append(time.perf_counter() - t)
    finally:
        srv.stdin.close()
        srv.wait()
    return {"mcp_%s_ms" % k: statistics.median(v) * 1000 for k, v in times.items()}


def report(fig, row):
    if "mcp_bare_ms" not in fig:
        return
    print("MCP tool call (read_file of 100 bytes; a fresh sandbox per call)")
    bare = ("vs bare", fig["mcp_bare_ms"])
    print(row("bare subprocess of the worker", fig["mcp_bare_ms"], "ms"))
    print(row("McpSandbox.call_tool_sync", fig["mcp_api_ms"], "ms", bare))
    print(row("stdio server round trip", fig["mcp_server_ms"], "ms", bare))


if __name__ == "__main__":
    print(json.dumps(figures(), indent=1))
