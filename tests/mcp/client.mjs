// Drives `python3 -m sandlock.mcp` with the official MCP TypeScript SDK
// client over stdio and prints what each step saw as one JSON object
// (tests/python/test_mcp.py asserts on it).
// Usage: node client.mjs WORKSPACE SECRET_PATH PORT
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import fs from "node:fs";

const [ws, secret, port] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: process.env.SANDLOCK_PYTHON || "/usr/bin/python3",
  args: ["-m", "sandlock.mcp", "--workspace", ws, "--timeout", "4"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "sandlock-test", version: "1.0.0" });
await client.connect(transport);

const text = (r) => ({ error: !!r.isError, text: r.content.map((c) => c.text).join("") });
const call = async (name, args, opts) => text(await client.callTool({ name, arguments: args }, undefined, opts));
const out = {};

out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.write = await call("write_file", { path: "sub/a.txt", content: "hello mcp" });
out.read = await call("read_file", { path: "sub/a.txt" });
out.list = await call("list_files", {});
out.shell = await call("shell", { command: "echo hi; id -u" });
out.python = await call("python", { code: "print(6 * 7)" });
// Escapes: a file outside the workspace, by '..' and by absolute path.
out.escape_read = await call("read_file", { path: "../" + secret.split("/").slice(-2).join("/") });
out.escape_shell = await call("shell", { command: `cat ${secret}` });
out.escape_write = await call("write_file", { path: secret, content: "owned" });
// The network: a TCP server the test runs on loopback.
out.net = await call("python", {
  code: `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=3); print("connected")\nexcept OSError as e:\n    print("refused", type(e).__name__)`,
});
// Concurrency: call A waits for a file only call B makes.
const [a, b] = await Promise.all([
  call("shell", { command: "for i in $(seq 60); do [ -e go ] && break; sleep 0.05; done; [ -e go ] && echo met || echo alone" }),
  call("shell", { command: "sleep 0.3; touch go; echo set" }),
]);
out.concurrent = [a, b];
// A hanging tool is cut at the server's timeout; the server keeps serving.
out.hang = await call("shell", { command: "echo $$ > hang.pid; sleep 60" });
out.after_hang = await call("shell", { command: "echo still serving" });
// A cancelled call: its sandbox is killed.
const ac = new AbortController();
const pending = call("shell", { command: "echo $$ > cancel.pid; sleep 60" }, { signal: ac.signal }).catch((e) => ({ aborted: String(e) }));
for (let i = 0; i < 100 && !fs.existsSync(ws + "/cancel.pid"); i++) await new Promise((r) => setTimeout(r, 50));
ac.abort();
out.cancelled = await pending;
out.ping = await client.ping();
await client.close();
console.log(JSON.stringify(out));
