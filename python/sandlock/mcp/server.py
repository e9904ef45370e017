"""The MCP server: JSON-RPC 2.0 over stdio (one message per line) or over
HTTP (the SSE transport: GET /sse + POST /messages; and a plain POST /mcp
answered with JSON), serving the tools of an McpSandbox.

Methods: initialize, ping, tools/list, tools/call; notifications
initialized and cancelled (the call's sandbox is killed).  Each tools/call
runs on its own thread, so a slow tool never stops the others or a ping;
a tool's failure is a result with isError, never the server's.
"""
import http.server
import json
import queue
import sys
import threading
import urllib.parse
import uuid
from typing import Any, BinaryIO, Callable, Dict, Iterable, Optional, Tuple, Type

from . import McpSandbox, ToolCallError

PROTOCOLS = ("2025-06-18", "2025-03-26", "2024-11-05")
PARSE_ERROR, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602

Msg = Dict[str, Any]  # one JSON-RPC message
Send = Callable[[Msg], None]


def _error(mid: Any, code: int, text: str) -> Msg:
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": text}}


def _result(mid: Any, result: Any) -> Msg:
    return {"jsonrpc": "2.0", "id": mid, "result": result}


class Server:
    """Protocol state shared by the transports."""

    def __init__(self, mcp: McpSandbox, name: str = "sandlock", version: str = "") -> None:
        self.mcp = mcp
        self.info = {"name": name, "version": version or _version()}

    def handle(self, msg: Any, send: Send) -> None:
        """Act on one decoded message (or batch); answers go to send."""
        if isinstance(msg, list):
            for m in msg:
                self.handle(m, send)
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            send(_error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message"))
            return
        method, mid = msg.get("method"), msg.get("id")
        params = msg.get("params") or {}
        if method is None:
            return  # a response to us: we send no requests
        if "id" not in msg:
            self._notification(method, params)
        elif method == "tools/call":
            threading.Thread(target=self._call, args=(mid, params, send), daemon=True).start()
        else:
            send(self._answer(mid, method, params))

    def _notification(self, method: Any, params: Any) -> None:
        if method == "notifications/cancelled":
            self.mcp.cancel(params.get("requestId"))

    def _answer(self, mid: Any, method: Any, params: Any) -> Msg:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return _result(mid, {
                "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": self.info,
                "instructions": "Every tool call runs in its own sandbox confined to "
                                "the workspace %s, without network." % self.mcp.workspace})
        if method == "ping":
            return _result(mid, {})
        if method == "tools/list":
            return _result(mid, {"tools": self.mcp.definitions()})
        return _error(mid, NO_METHOD, "method not found: %s" % method)

    def _call(self, mid: Any, params: Any, send: Send) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        if name not in self.mcp.tools or not isinstance(args, dict):
            send(_error(mid, INVALID_PARAMS, "unknown tool: %s" % name if name not in
                        self.mcp.tools else "arguments must be an object"))
            return
        try:
            text, failed = self.mcp.call_tool_sync(name, args, key=mid), False
        except ToolCallError as e:
            text, failed = str(e), True
        except Exception as e:  # a sandbox that could not start: the tool's failure
            text, failed = "%s: %s" % (type(e).__name__, e), True
        send(_result(mid, {"content": [{"type": "text", "text": text}], "isError": failed}))


def _version() -> str:
    try:
        from .._native import VERSION
        return VERSION
    except ImportError:
        return "0"


# ---------------------------------------------------------------- stdio

def serve_stdio(server: Server, rfile: Optional[Iterable[bytes]] = None,
                wfile: Optional[BinaryIO] = None) -> None:
    """Serve newline-delimited JSON-RPC on stdin/stdout until EOF."""
    rfile = rfile or sys.stdin.buffer
    out: BinaryIO = wfile or sys.stdout.buffer
    lock = threading.Lock()

    def send(msg: Msg) -> None:
        data = (json.dumps(msg) + "\n").encode("utf-8")
        with lock:
            out.write(data)
            out.flush()

    for line in rfile:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            send(_error(None, PARSE_ERROR, "parse error"))
            continue
        server.handle(msg, send)


# ---------------------------------------------------------------- HTTP / SSE

class _Sessions:
    def __init__(self) -> None:
        self.queues: Dict[str, "queue.Queue[Optional[Msg]]"] = {}
        self.lock = threading.Lock()

    def new(self) -> "Tuple[str, queue.Queue[Optional[Msg]]]":
        sid = uuid.uuid4().hex
        q: "queue.Queue[Optional[Msg]]" = queue.Queue()
        with self.lock:
            self.queues[sid] = q
        return sid, q

    def get(self, sid: str) -> "Optional[queue.Queue[Optional[Msg]]]":
        with self.lock:
            return self.queues.get(sid)

    def drop(self, sid: str) -> None:
        with self.lock:
            self.queues.pop(sid, None)


def _handler(server: Server,
             sessions: _Sessions) -> Type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # stderr stays quiet; stdout is never used
            pass

        def _reply(self, code: int, body: bytes = b"", ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if urllib.parse.urlparse(self.path).path != "/sse":
                self._reply(404, b"not found", "text/plain")
                return
            sid, q = sessions.new()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            try:
                self._event("endpoint", "/messages?session_id=" + sid)
                while True:
                    try:
                        msg = q.get(timeout=15)
                    except queue.Empty:
                        self.wfile.write(b": keepalive\n\n")
                        self.wfile.flush()
                        continue
                    self._event("message", json.dumps(msg))
            except OSError:
                pass
            finally:
                sessions.drop(sid)

        def _event(self, kind: str, data: str) -> None:
            self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, data)).encode("utf-8"))
            self.wfile.flush()

        def _body(self) -> Any:
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"null")

        def do_POST(self) -> None:
            url = urllib.parse.urlparse(self.path)
            try:
                msg = self._body()
            except ValueError:
                self._reply(400, json.dumps(_error(None, PARSE_ERROR, "parse error")).encode())
                return
            if url.path == "/messages":
                sid = urllib.parse.parse_qs(url.query).get("session_id", [""])[0]
                q = sessions.get(sid)
                if q is None:
                    self._reply(404, b"no such session", "text/plain")
                    return
                self._reply(202, b"accepted", "text/plain")
                server.handle(msg, q.put)
            elif url.path == "/mcp":
                self._direct(msg)
            else:
                self._reply(404, b"not found", "text/plain")

        def _direct(self, msg: Any) -> None:
            """POST /mcp: the answers to msg, as JSON, when all are in."""
            box: "queue.Queue[Msg]" = queue.Queue()
            msgs = msg if isinstance(msg, list) else [msg]
            want = sum(1 for m in msgs if isinstance(m, dict) and "id" in m and "method" in m)
            server.handle(msg, box.put)
            out = [box.get() for _ in range(want)]
            if not out:
                self._reply(202, b"", "text/plain")
                return
            self._reply(200, json.dumps(out if isinstance(msg, list) else out[0]).encode())

    return Handler


def make_http_server(server: Server, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server for the SSE and /mcp transports (not started)."""
    httpd = http.server.ThreadingHTTPServer((host, port), _handler(server, _Sessions()))
    httpd.daemon_threads = True
    return httpd
