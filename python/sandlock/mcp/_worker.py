"""Runs one tool call inside its per-call sandbox (see sandlock.mcp).

Started as a script, ``python3 _worker.py REQUEST.json``, so it never
imports the sandlock package itself (that would load the native library
into every call).  The request names the tool's module (by import name,
with the sys.path entry that makes it importable, or by file) and its
function, and holds the arguments.  The function's own prints go to
stderr; the last line on the real stdout is the JSON answer:
{"ok": true, "result": ...} or {"ok": false, "error": "..."}.
"""
import importlib
import importlib.util
import json
import os
import sys
import traceback
from types import ModuleType
from typing import Any, Dict


def _load(req: Dict[str, Any]) -> ModuleType:
    if req.get("file"):
        spec = importlib.util.spec_from_file_location(req["module"], req["file"])
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %s as a module" % req["file"])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[req["module"]] = mod
        spec.loader.exec_module(mod)
        return mod
    for p in reversed(req.get("path", [])):
        sys.path.insert(0, p)
    return importlib.import_module(req["module"])


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        req = json.load(f)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the tool's prints must not be taken for its answer
    sys.stdout = sys.stderr
    try:
        if req.get("cwd"):
            os.chdir(req["cwd"])
        func = getattr(_load(req), req["function"])
        args = dict(req.get("arguments") or {})
        if req.get("workspace") is not None and req.get("takes_workspace"):
            args["workspace"] = req["workspace"]
        answer = {"ok": True, "result": func(**args)}
    except BaseException as e:  # the answer says what failed; the call is over anyway
        traceback.print_exc()
        answer = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    try:
        text = json.dumps(answer)
    except (TypeError, ValueError):
        text = json.dumps({"ok": True, "result": str(answer.get("result"))})
    out.write(text + "\n")
    out.flush()


if __name__ == "__main__":
    main()
