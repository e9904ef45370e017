"""sandlock.mcp: tools for agents, each call in a fresh deny-by-default
sandbox; the MCP server driven by the official TypeScript SDK client
(tests/mcp, installed with `npm ci --prefix tests/mcp`)."""
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import pytest

from conftest import asan_host
import sandlock
from sandlock.mcp import (McpSandbox, ToolCallError, capabilities_from_mcp_tool,
                          policy_for_tool)
from sandlock.mcp.server import Server, make_http_server

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLIENT_DIR = os.path.join(REPO, "tests", "mcp")
PY = "/usr/bin/python3"

TOOLS = '''
import os, socket

def greet(name: str, times: int = 1, *, workspace: str) -> str:
    """Greets; shows the workspace it was given."""
    return "%s in %s" % (("hi " + name) * times, workspace)

def save(path: str, text: str, *, workspace: str) -> str:
    with open(os.path.join(workspace, path), "w") as f:
        f.write(text)
    return "ok"

def env(key: str) -> str:
    return os.environ.get(key, "<unset>")

def dial(port: int) -> str:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    return "connected"

def structured() -> dict:
    print("noise on stdout must not be the answer")
    return {"a": [1, 2]}
'''


@pytest.fixture
def tools_module(tmp_path, monkeypatch):
    d = tmp_path / "mods"
    d.mkdir()
    (d / "agent_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(d))
    import importlib
    sys.modules.pop("agent_tools", None)
    return importlib.import_module("agent_tools")


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return str(ws)


@pytest.fixture
def tcp_server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield s.getsockname()[1]
    s.close()


def test_local_tools_run_sandboxed_with_schema_and_workspace(tools_module, workspace):
    mcp = McpSandbox(workspace=workspace, timeout=10)
    mcp.add_tool("greet", tools_module.greet)
    mcp.add_tool("structured", tools_module.structured)
    # The model cannot choose the workspace: it is hidden and overridden.
    got = asyncio.run(mcp.call_tool("greet", {"name": "bob", "times": 2,
                                              "workspace": "/etc"}))
    assert got == "hi bobhi bob in %s" % workspace
    assert json.loads(asyncio.run(mcp.call_tool("structured"))) == {"a": [1, 2]}
    fn = mcp.tool_definitions_openai()[0]
    assert fn["type"] == "function" and fn["function"]["name"] == "greet"
    assert fn["function"]["description"] == "Greets; shows the workspace it was given."
    assert fn["function"]["parameters"] == {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "times": {"type": "integer"}}}
    assert set(mcp.tools) == {"greet", "structured"}
    assert isinstance(mcp.get_policy("greet"), sandlock.Sandbox)


def test_deny_by_default_and_capabilities_grant(tools_module, workspace, tcp_server,
                                                monkeypatch):
    monkeypatch.setenv("MCP_SECRET", "s3cret")
    mcp = McpSandbox(workspace=workspace, timeout=10)
    mcp.add_tool("save", tools_module.save)
    mcp.add_tool("env", tools_module.env)
    mcp.add_tool("dial", tools_module.dial)
    mcp.add_tool("save_rw", tools_module.save, capabilities={"fs_writable": [workspace]})
    mcp.add_tool("env_granted", tools_module.env, capabilities={"env": {"MCP_SECRET": "given"}})
    mcp.add_tool("dial_granted", tools_module.dial,
                 capabilities={"net_allow": ["127.0.0.1:%d" % tcp_server]})
    # Each probe works outside first.
    assert tools_module.env("MCP_SECRET") == "s3cret"
    assert tools_module.dial(tcp_server) == "connected"
    with pytest.raises(ToolCallError, match="PermissionError"):
        mcp.call_tool_sync("save", {"path": "f", "text": "x"})
    assert not os.path.exists(os.path.join(workspace, "f"))
    assert mcp.call_tool_sync("env", {"key": "MCP_SECRET"}) == "<unset>"
    with pytest.raises(ToolCallError, match="PermissionError"):
        mcp.call_tool_sync("dial", {"port": tcp_server})
    assert mcp.call_tool_sync("save_rw", {"path": "f", "text": "x"}) == "ok"
    assert open(os.path.join(workspace, "f")).read() == "x"
    assert mcp.call_tool_sync("env_granted", {"key": "MCP_SECRET"}) == "given"
    assert mcp.call_tool_sync("dial_granted", {"port": tcp_server}) == "connected"


def test_rejects_what_a_worker_cannot_import(workspace):
    mcp = McpSandbox(workspace=workspace)
    with pytest.raises(ValueError, match="top-level"):
        mcp.add_tool("l", lambda: 1)

    def nested():
        return 1
    with pytest.raises(ValueError, match="top-level"):
        mcp.add_tool("n", nested)
    with pytest.raises(ToolCallError, match="unknown tool"):
        mcp.call_tool_sync("nope")


def test_policy_and_capabilities_helpers(workspace):
    sb = policy_for_tool(workspace=workspace, capabilities={"max_memory": "64M"})
    assert workspace in sb.fs_readable and list(sb.fs_writable) == []
    assert sb.clean_env is True and list(sb.net_allow) == []
    tool = {"name": "t", "annotations": {"sandlock:fs_writable": ["/tmp/x"], "title": "T"},
            "_meta": {"sandlock:max_memory": "1G"}}
    assert capabilities_from_mcp_tool(tool) == {"fs_writable": ["/tmp/x"], "max_memory": "1G"}


def test_remote_session_tools_are_forwarded(workspace):
    class Listed:
        tools = [{"name": "remote_echo", "description": "echo",
                  "inputSchema": {"type": "object"},
                  "annotations": {"sandlock:net_allow": ["example.org:443"]}}]

    class Content:
        def __init__(self, text):
            self.text = text

    class Res:
        def __init__(self, text, err):
            self.content, self.isError = [Content(text)], err

    class Session:
        async def list_tools(self):
            return Listed()

        async def call_tool(self, name, args):
            return Res("%s:%s" % (name, args.get("x")), args.get("x") == "bad")

    mcp = McpSandbox(workspace=workspace)

    async def go():
        await mcp.add_mcp_session(Session())
        ok = await mcp.call_tool("remote_echo", {"x": "1"})
        with pytest.raises(ToolCallError):
            await mcp.call_tool("remote_echo", {"x": "bad"})
        return ok
    assert asyncio.run(go()) == "remote_echo:1"
    assert mcp.tools["remote_echo"].capabilities == {"net_allow": ["example.org:443"]}


def test_http_transports(workspace):
    from sandlock.mcp.__main__ import build
    httpd = make_http_server(Server(build(workspace, 10)), "127.0.0.1", 0)
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                           "params": {"name": "shell", "arguments": {"command": "echo via-http"}}})
        req = urllib.request.Request("http://127.0.0.1:%d/mcp" % port, body.encode(),
                                     {"Content-Type": "application/json"})
        got = json.load(urllib.request.urlopen(req, timeout=30))
        assert got["id"] == 7 and got["result"]["content"][0]["text"] == "via-http\n"
        # SSE: the endpoint event, then answers to POSTs arrive as message events.
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(b"GET /sse HTTP/1.1\r\nHost: x\r\n\r\n")
        f = s.makefile("rb")
        events = _sse_events(f)
        kind, data = next(events)
        assert kind == "endpoint" and data.startswith("/messages?session_id=")
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        r = urllib.request.urlopen(urllib.request.Request(
            "http://127.0.0.1:%d%s" % (port, data), ping), timeout=30)
        assert r.status == 202
        kind, data = next(events)
        assert kind == "message" and json.loads(data) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        s.close()
    finally:
        httpd.shutdown()


def _sse_events(f):
    kind = None
    for raw in f:
        line = raw.decode().rstrip("\r\n")
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            yield kind, line[6:]


def _gone(pidfile, wait=10.0):
    pid = int(open(pidfile).read())
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_official_typescript_client_over_stdio(tmp_path, tcp_server):
    if not os.path.isdir(os.path.join(CLIENT_DIR, "node_modules", "@modelcontextprotocol")):
        pytest.skip("the MCP TypeScript SDK is not installed: npm ci --prefix tests/mcp")
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "private" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("topsecret")
    assert open(str(secret)).read() == "topsecret"  # readable outside
    probe = subprocess.run([PY, "-c", "import socket; socket.create_connection(('127.0.0.1', %d))"
                            % tcp_server], capture_output=True)
    assert probe.returncode == 0  # the network probe works outside
    env = asan_host(dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"),
                         SANDLOCK_PYTHON=PY))
    p = subprocess.run(["node", os.path.join(CLIENT_DIR, "client.mjs"), str(ws), str(secret),
                        str(tcp_server)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["server"]["name"] == "sandlock"
    assert out["tools"] == ["list_files", "python", "read_file", "shell", "write_file"]
    assert out["write"]["error"] is False
    assert out["read"] == {"error": False, "text": "hello mcp"}
    assert out["list"]["text"] == "sub/"
    assert out["shell"]["text"].startswith("hi\n")
    assert out["python"]["text"] == "42\n"
    assert out["escape_read"]["error"] and "Permission denied" in out["escape_read"]["text"]
    assert "Permission denied" in out["escape_shell"]["text"]
    assert out["escape_write"]["error"]
    assert open(str(secret)).read() == "topsecret"
    assert out["net"]["text"] == "refused PermissionError\n"
    assert [c["text"] for c in out["concurrent"]] == ["met\n", "set\n"]
    assert out["hang"] == {"error": True, "text": "tool shell timed out after 4s"}
    assert out["after_hang"]["text"] == "still serving\n"
    assert "aborted" in out["cancelled"]
    assert out["ping"] == {}
    assert _gone(str(ws / "hang.pid")) and _gone(str(ws / "cancel.pid"))
