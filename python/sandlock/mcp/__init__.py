"""Sandboxed tools for AI agents over the Model Context Protocol.

Every tool call runs in a fresh sandbox, deny by default: the workspace
and the system are readable, nothing is writable, the environment is
clean and there is no network.  A tool's ``capabilities`` (any Sandbox
keyword: ``fs_writable``, ``net_allow``, ``env``, ``max_memory``...) grant
more.  The tool function runs in a worker process inside that sandbox:
it must be a top-level function of an importable module (or of the main
script, whose top level is then run again in the worker: guard start-up
code with ``if __name__ == "__main__":``).

``McpSandbox`` holds the tools; ``python3 -m sandlock.mcp`` serves the
built-in ones (shell, python, read_file, write_file, list_files) over
stdio or SSE (sandlock.mcp.server).  No MCP SDK is needed; a session of
the ``mcp`` package (or anything with ``list_tools``/``call_tool``) can be
added with ``add_mcp_session``.
"""
import asyncio
import inspect
import json
import os
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import Sandbox, StdioMode

__all__ = ["McpSandbox", "ToolCallError", "policy_for_tool", "capabilities_from_mcp_tool"]

# Read-only system trees a tool's interpreter and programs need.
_SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")
_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_PREFIX = "sandlock:"


class ToolCallError(RuntimeError):
    """A tool call failed: the tool raised, timed out, was cancelled, or
    its sandbox refused to start."""


def _python_paths() -> List[str]:
    """What the worker's interpreter needs to read beyond _SYSTEM."""
    exe = os.path.realpath(sys.executable)
    paths = {os.path.dirname(exe), sys.prefix, sys.base_prefix, sys.exec_prefix}
    return sorted(p for p in paths if p and not any(p == s or p.startswith(s + "/")
                                                   for s in _SYSTEM))


def policy_for_tool(*, workspace: str, capabilities: Optional[Dict[str, Any]] = None,
                    _extra_readable: Sequence[str] = ()) -> Sandbox:
    """A deny-by-default Sandbox for one tool: system and workspace
    readable, nothing writable, clean environment, no network; any
    Sandbox keyword in capabilities adds to it (lists are extended,
    other values replace)."""
    caps = dict(capabilities or {})
    readable = list(_SYSTEM) + [os.path.abspath(workspace)] + _python_paths()
    readable += list(_extra_readable) + list(caps.pop("fs_readable", []))
    kw: Dict[str, Any] = {"fs_readable": [p for p in dict.fromkeys(readable)
                                          if os.path.exists(p)],
                          "clean_env": True, "cwd": os.path.abspath(workspace)}
    kw.update(caps)
    return Sandbox(**kw)


def capabilities_from_mcp_tool(tool: Any) -> Dict[str, Any]:
    """The ``sandlock:*`` keys of an MCP tool's annotations or meta (a
    dict or an object of the mcp package), without the prefix."""
    caps: Dict[str, Any] = {}
    for attr in ("annotations", "meta", "_meta"):
        src = tool.get(attr) if isinstance(tool, dict) else getattr(tool, attr, None)
        if src is not None and not isinstance(src, dict):
            src = getattr(src, "model_dump", lambda: vars(src))()
        for k, v in (src or {}).items():
            if isinstance(k, str) and k.startswith(_PREFIX):
                caps[k[len(_PREFIX):]] = v
    return caps


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", dict: "object"}


def _schema(func: Callable[..., Any]) -> Dict[str, Any]:
    """A JSON schema of func's parameters (workspace is hidden)."""
    props: Dict[str, Any] = {}
    required: List[str] = []
    for name, p in inspect.signature(func).parameters.items():
        if name == "workspace" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = p.annotation
        ann = getattr(ann, "__origin__", ann)
        props[name] = {"type": _JSON_TYPES[ann]} if ann in _JSON_TYPES else {}
        if p.default is p.empty:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


def _locate(func: Callable[..., Any]) -> Dict[str, Any]:
    """How the worker finds func: by import name, or by file for __main__."""
    qual, name = getattr(func, "__qualname__", ""), getattr(func, "__name__", "")
    if not inspect.isfunction(func) or name == "<lambda>" or qual != name:
        raise ValueError("a tool must be a top-level function of an importable module "
                         "(not a lambda, method or nested function): %r" % (func,))
    mod = sys.modules.get(func.__module__)
    path = getattr(mod, "__file__", None)
    if not path:
        raise ValueError("tool %s: its module %s has no file" % (name, func.__module__))
    path = os.path.abspath(path)
    if func.__module__ == "__main__" or func.__module__.split(".")[0] == "sandlock":
        return {"module": "_sandlock_tool_" + func.__module__.replace(".", "_"),
                "file": path, "function": name, "read": [os.path.dirname(path)]}
    root = path
    for _ in range(func.__module__.count(".") + 1):
        root = os.path.dirname(root)
    if os.path.basename(path) == "__init__.py":
        root = os.path.dirname(root)
    return {"module": func.__module__, "path": [root], "function": name, "read": [root]}


class _LocalTool:
    def __init__(self, name: str, func: Callable[..., Any], description: str,
                 capabilities: Optional[Dict[str, Any]],
                 input_schema: Optional[Dict[str, Any]]) -> None:
        self.name = name
        self.where = _locate(func)
        self.takes_workspace = "workspace" in inspect.signature(func).parameters
        self.description = description or (inspect.getdoc(func) or "").split("\n\n")[0]
        self.capabilities = dict(capabilities or {})
        self.input_schema = input_schema or _schema(func)


class _RemoteTool:
    def __init__(self, session: Any, tool: Any) -> None:
        get: Callable[[str], Any] = (lambda k: tool.get(k)) if isinstance(tool, dict) else \
            (lambda k: getattr(tool, k, None))
        self.session = session
        self.name = get("name")
        self.description = get("description") or ""
        self.input_schema = get("inputSchema") or get("input_schema") or {"type": "object"}
        self.capabilities = capabilities_from_mcp_tool(tool)


class McpSandbox:
    """Tools for an agent, each call in its own deny-by-default sandbox."""

    def __init__(self, workspace: str = "/tmp/sandlock", timeout: float = 30.0):
        self.workspace = os.path.abspath(workspace)
        self.timeout = timeout
        self._tools: Dict[str, Any] = {}
        self._running: Dict[Any, Any] = {}  # call key -> Process, for cancel()
        self._lock = threading.Lock()

    @property
    def tools(self) -> Dict[str, Any]:
        """Every registered tool (local and remote), by name."""
        return dict(self._tools)

    def add_tool(self, name: str, func: Callable[..., Any], *, description: str = "",
                 capabilities: Optional[Dict[str, Any]] = None,
                 input_schema: Optional[Dict[str, Any]] = None) -> None:
        """Register a local tool (see the module's docstring)."""
        tool = _LocalTool(name, func, description, capabilities, input_schema)
        policy_for_tool(workspace=self.workspace, capabilities=tool.capabilities)  # validate now
        self._tools[name] = tool

    async def add_mcp_session(self, session: Any) -> None:
        """Add the tools of a remote MCP server's client session; calls to
        them are forwarded to it."""
        listed = await session.list_tools()
        for t in getattr(listed, "tools", listed):
            tool = _RemoteTool(session, t)
            self._tools[tool.name] = tool

    def get_policy(self, tool_name: str) -> Sandbox:
        """The Sandbox a call of this local tool runs in."""
        tool = self._local(tool_name)
        return policy_for_tool(workspace=self.workspace, capabilities=tool.capabilities,
                               _extra_readable=tool.where["read"])

    def tool_definitions_openai(self) -> List[Dict[str, Any]]:
        """The tools in OpenAI's function-calling format."""
        return [{"type": "function",
                 "function": {"name": t.name, "description": t.description,
                              "parameters": t.input_schema}} for t in self._tools.values()]

    def definitions(self) -> List[Dict[str, Any]]:
        """The tools as MCP's tools/list describes them."""
        return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in self._tools.values()]

    async def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None, *,
                        timeout: Optional[float] = None) -> str:
        """Call a tool: a local one in a fresh sandbox (in a thread, so the
        event loop goes on), a remote one through its session.  Its text,
        or ToolCallError."""
        tool = self._tools.get(name)
        if isinstance(tool, _RemoteTool):
            res = await tool.session.call_tool(name, arguments or {})
            text = "".join(getattr(c, "text", "") for c in getattr(res, "content", []))
            if getattr(res, "isError", False):
                raise ToolCallError(text or "tool %s failed" % name)
            return text
        loop = asyncio.get_event_loop()
        return await loop.run_in_executor(None, lambda: self.call_tool_sync(
            name, arguments, timeout=timeout))

    def _local(self, name: str) -> _LocalTool:
        tool = self._tools.get(name)
        if not isinstance(tool, _LocalTool):
            raise ToolCallError("unknown tool: %s" % name if tool is None
                                else "%s is a remote tool" % name)
        return tool

    def call_tool_sync(self, name: str, arguments: Optional[Dict[str, Any]] = None, *,
                       timeout: Optional[float] = None, key: Any = None) -> str:
        """call_tool for a local tool, blocking.  key names the call for
        cancel()."""
        tool = self._local(name)
        args = dict(arguments or {})
        if tool.takes_workspace:
            args.pop("workspace", None)  # the model never chooses it
        limit = self.timeout if timeout is None else timeout
        with tempfile.TemporaryDirectory(prefix="sandlock-mcp-") as d:
            req = dict(tool.where, arguments=args, workspace=self.workspace,
                       takes_workspace=tool.takes_workspace)
            path = os.path.join(d, "request.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(req, f)
            sb = policy_for_tool(workspace=self.workspace, capabilities=tool.capabilities,
                                 _extra_readable=tool.where["read"] + [d, _WORKER])
            res = self._run(sb, [sys.executable, "-I", _WORKER, path], limit, key)
        return _answer(name, res, limit)

    def _run(self, sb: Sandbox, argv: List[str], limit: float, key: Any) -> Any:
        proc = sb.popen(argv, stdin=StdioMode.NULL, stdout=StdioMode.CAPTURE,
                        stderr=StdioMode.CAPTURE)
        with self._lock:
            self._running[key] = proc
        try:
            return proc.wait(limit)
        finally:
            with self._lock:
                self._running.pop(key, None)

    def cancel(self, key: Any) -> bool:
        """Kill the sandbox of the running call named key (True if any)."""
        with self._lock:
            proc = self._running.get(key)
        if proc is None:
            return False
        proc.kill()
        return True


def _answer(name: str, res: Any, limit: float) -> str:
    """The tool's text from its run's Result, or ToolCallError."""
    from .. import ExitReason

    if res.reason == ExitReason.TIMEOUT:
        raise ToolCallError("tool %s timed out after %gs" % (name, limit))
    lines = res.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = res.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise ToolCallError("tool %s ended without an answer (%s)%s" % (
            name, res.error or "exit %d" % res.exit_code, ": " + tail if tail else ""))
    if not answer.get("ok"):
        raise ToolCallError(answer.get("error") or "tool %s failed" % name)
    result = answer.get("result")
    return result if isinstance(result, str) else json.dumps(result)
