"""The workload suite's harness: run a real program bare, in a plain
sandbox and in a COW workdir, and say what it produced.

A workload is a directory it works in (DIR, made fresh for each mode from
one setup) and a command.  Modes:
  bare     the command as is, cwd DIR
  sandbox  `sandlock run` with the system read-only, DIR -w, and the
           workload's own grants (what a user would give)
  cow      the same, but DIR is a COW workdir (`--workdir DIR`): every
           write is staged and committed at the end
What is compared: the exit status, the output the workload names, and
DIR's tree after the run (paths, types, modes, file hashes; a workload
may leave out names that differ by nature, such as a pid file).
"""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SANDLOCK = str(BUILD / "sandlock")
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
MODES = ("bare", "sandbox", "cow")
# "nogetfd": the sandbox mode under build/helpers/nosysptrace, the calls
# Docker's and Kubernetes' default seccomp profiles refuse without
# CAP_SYS_PTRACE (pidfd_getfd & co.) refused: how sandlock runs in a
# container there (docs/containers.md).  The server workloads add it.
NOGETFD = "nogetfd"
# /dev/null, /dev/urandom: every sandbox has them (src/launch/devmin.c); nothing
# of /dev is granted here.
TIMES = {}  # (workload, mode) -> [seconds]: ratios printed by conftest.py


def need(*tools):
    """Skip the test, saying which, when a tool is not installed."""
    import pytest
    for t in tools:
        if not shutil.which(t):
            pytest.skip("%s is not installed" % t)


def sandbox_argv(mode, workdir, grants):
    argv = [str(BUILD / "helpers" / "nosysptrace")] if mode == NOGETFD else []
    argv += [SANDLOCK, "run"]
    for d in SYS_RO:
        argv += ["-r", d]
    argv += list(grants) + ["-C", str(workdir)]
    argv += ["--workdir", str(workdir)] if mode == "cow" else ["-w", str(workdir)]
    return argv + ["--"]


def run(name, mode, argv, workdir, grants=(), env=None, timeout=300, input=None):
    """Run argv in mode with cwd workdir: CompletedProcess (text), timed."""
    full = list(argv) if mode == "bare" else sandbox_argv(mode, workdir, grants) + list(argv)
    e = dict(os.environ)
    e.update(env or {})
    t0 = time.perf_counter()
    r = subprocess.run(full, cwd=str(workdir), env=e, capture_output=True, text=True,
                       timeout=timeout, input=input)
    TIMES.setdefault((name, mode), []).append(time.perf_counter() - t0)
    return r


def spawn(mode, argv, workdir, grants=(), env=None, **kw):
    """Start argv (a server) in mode: Popen."""
    full = list(argv) if mode == "bare" else sandbox_argv(mode, workdir, grants) + list(argv)
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen(full, cwd=str(workdir), env=e, **kw)


def tree(top, skip=()):
    """{rel path: (kind, mode, sha256 or link target)} of everything under
    top; names (any component) in skip are left out with what is below."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        for n in sorted(dirs + files):
            if n in skip:
                continue
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", mode, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", mode, "")
            else:
                with open(p, "rb") as f:
                    out[rel] = ("f", mode, hashlib.sha256(f.read()).hexdigest())
    return out


def fresh(template, base, mode):
    """A copy of template (a directory) for one mode, under base."""
    d = Path(base) / mode
    if d.exists():
        shutil.rmtree(d)
    if template is None:
        d.mkdir(parents=True)
    else:
        shutil.copytree(template, d, symlinks=True)
    return d


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc=None, timeout=30):
    import socket
    deadline = time.time() + timeout
    while time.time() < deadline:  # a rendezvous, not a measurement
        if proc is not None and proc.poll() is not None:
            raise AssertionError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError("nothing listens on %d" % port)


def ratios():
    """Lines 'workload  bare s  sandbox x  cow x  [nogetfd x]' from TIMES
    (medians)."""
    import statistics
    names = sorted({n for n, _ in TIMES})
    lines = []
    for n in names:
        b = TIMES.get((n, "bare"))
        if not b:
            continue
        bm = statistics.median(b)
        cells = ["%-22s bare %7.3f s" % (n, bm)]
        for m in ("sandbox", "cow", NOGETFD):
            if TIMES.get((n, m)):
                cells.append("%s %5.2fx" % (m, statistics.median(TIMES[(n, m)]) / bm))
        lines.append("  ".join(cells))
    return lines


def dump_json(path):
    with open(path, "w") as f:
        json.dump({"%s/%s" % k: v for k, v in TIMES.items()}, f, indent=1)


def workload(name, base, argv, setup=None, grants=(), env=None, skip=(), output=None,
             modes=MODES, timeout=300, input=None):
    """Run one workload in every mode, each in the same fresh directory
    base/work (made by setup(dir) from scratch, so absolute paths a tool
    records are the same in every mode), with a fresh TMPDIR base/tmp
    granted -w.  Returns {mode: (exit status, output(r, dir), tree)} and
    asserts each mode matches bare.  output defaults to stdout."""
    base = Path(base)
    work, tmp = base / "work", base / "tmp"
    got = {}
    for mode in modes:
        for d in (work, tmp):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)
        if setup:
            setup(work)
        g = list(grants) + ["-w", str(tmp)]
        e = dict(env or {}, TMPDIR=str(tmp))
        r = run(name, mode, argv, work, g, e, timeout=timeout, input=input)
        assert r.returncode == 0 or mode != "bare", r.stderr[-3000:]
        shown = output(r, work) if output else r.stdout
        got[mode] = (r.returncode, shown, tree(work, skip))
        if mode != "bare":
            assert got[mode][0] == got["bare"][0], (mode, r.stderr[-3000:])
            assert got[mode][1] == got["bare"][1], (mode, r.stderr[-3000:])
            diff = {k for k in set(got[mode][2]) | set(got["bare"][2])
                    if got[mode][2].get(k) != got["bare"][2].get(k)}
            assert not diff, (mode, sorted(diff)[:20], r.stderr[-2000:])
    return got


class Server:
    """A threaded HTTP server outside the sandbox, on 127.0.0.1: GET /N
    answers "item N"; with certfile/keyfile it speaks TLS."""

    def __init__(self, certfile=None, keyfile=None):
        import http.server
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                body = ("item %s\n" % self.path.strip("/")).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class S(http.server.ThreadingHTTPServer):
            request_queue_size = 128  # 50 connects at once: no SYN retransmits

        self.httpd = S(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        if certfile:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def expected_items(n):
    return "".join("item %d\n" % i for i in range(n))
