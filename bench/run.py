#!/usr/bin/env python3
"""Run every sandlock benchmark and print one table (`make bench`).

Figures:
  startup   /bin/true: bare fork+exec, `env /bin/true` (the floor for any
            launcher command), the `sandlock run` CLI, sandlock_run (C ABI)
            and Sandbox.run (Python)
  openat    ns per openat+close inside loop_open: bare, sandboxed untrapped,
            trapped with a C handler (CONTINUE), trapped with a Python handler
            (CONTINUE), sync and ``async def`` (a deferred handler), interleaved
            (CONTINUE)
  onbehalf  (`openat N REPS onbehalf`) the same loop, openat trapped by a C
            handler: CONTINUE vs opened on the caller's behalf and injected
            (sandlock_open_on_behalf), with a bare run of the same batch as
            the base
  connect   ns per TCP connect+close to a local listener: bare, with an IP
            rule and with a port rule (both performed on the caller's
            behalf: never continued, a racing thread could swap the fd);
            ns per socket(AF_NETLINK) (+close): bare, and sandboxed (made in
            the loopback-only view and injected)
  bind      ns per TCP socket+bind+listen+close on a granted port
            (--net-allow-bind PORT): bare, sandboxed, and sandboxed without
            pidfd_getfd (under tests' nosysptrace filter: the bind made on
            a socket sandlock makes, installs and keeps until the listen,
            performed on it)
  redis     redis-server inside `sandlock run --net-allow-bind PORT`, driven
            by redis-benchmark from outside, vs a bare redis-server: SET and
            GET requests/s and p99 latency (skipped without redis-server)
  procvirt  the /proc views and determinism knobs vs bare (bench/procvirt.py)
  http      the HTTP proxy: proxied vs direct throughput and p50, TLS
            terminated vs direct HTTPS, a 1 GiB download (bench/httpproxy.py)
  forkrt    us per vfork: bare, sandboxed with the fork not trapped (-P 0)
            and trapped (the default max_processes), interleaved: the
            round trip a trapped process creation costs, and the
            supervisor's CPU per trapped fork (bench/forkrt.c)
  exec      fork + exec of a program by path: bare, sandboxed, COW real and
            staged, chroot (bench/execs.py)
  toolchain make -j2 of a ~70-file C project, pip install of a local
            package, pytest of a small project: bare, sandboxed with the
            project -w, cowfloor (the same sandbox with the COW trap set
            answered CONTINUE by a do-nothing C handler: the floor of any
            per-call interception, bench/cowfloor.c), COW --workdir
            committed; wall and CPU time (bench/toolchains.py)
  cowcalls  ns per path call of a build (readlink and stat outside the
            workdir, stat and open of a real and a staged file in it):
            bare, cowfloor, COW; wall and CPU of the whole run per call
            (bench/cowcalls.py)
  mcp       one MCP tools/call (a fresh sandbox per call) through the stdio
            server and McpSandbox, vs a bare subprocess of the same worker
            (bench/mcp.py)
  fork      us per clone of Sandbox.fork(N) (work_fn prints its id; fork to
            the last clone's Result), vs a bare os.fork() loop doing the same
            (a pipe per child, read to the end, reaped) and vs the reference's
            published ~530 us per clone
  cow       the copy-on-write workdir: ns per openat+close of a file in a
            workdir (bare; sandboxed without COW; COW, untouched real file,
            passed to the kernel; COW, staged file, opened in the upper layer
            and injected), and ms for `tar x` of UNTAR_FILES small files
            (bare; sandboxed into an fs_writable dir; COW workdir, aborted)
            plus the commit of that tree (COMMIT run minus ABORT run)
Each figure is a median over a few repetitions; each ratio is against the
figure it is compared with, all measured in this one invocation.  Nothing
here asserts on timing: the numbers are for reading.
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import procvirt  # noqa: E402  (bench/procvirt.py)
import execs  # noqa: E402  (bench/execs.py)
import toolchains  # noqa: E402  (bench/toolchains.py)
import cowcalls  # noqa: E402  (bench/cowcalls.py)
import mcp as mcp_bench  # noqa: E402  (bench/mcp.py)
import httpproxy  # noqa: E402  (bench/httpproxy.py)

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
BENCH = BUILD / "bench"
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]

STARTUP_RUNS = int(os.environ.get("BENCH_STARTUP_RUNS", "50"))
OPENAT_N = int(os.environ.get("BENCH_OPENAT_N", "20000"))
OPENAT_N_PY = int(os.environ.get("BENCH_OPENAT_N_PY", "3000"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
FORKRT_N = int(os.environ.get("BENCH_FORKRT_N", "2000"))


def run_c_bench(name, *args):
    """Run build/bench/<name> and parse its "key value" lines."""
    out = subprocess.run([str(BENCH / name), *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    figures = {}
    for line in out.splitlines():
        key, value = line.split()
        figures[key] = float(value)
    return figures


def as_text(data):
    return data.decode() if isinstance(data, (bytes, bytearray)) else str(data)


def python_figures():
    """The Python-package variants; {} with a note if the package fails."""
    sys.path.insert(0, str(REPO / "python"))
    import sandlock
    from sandlock.handler import Handler, NotifAction, ExceptionPolicy

    class Continue(Handler):
        on_exception = ExceptionPolicy.KILL

        def handle(self, ctx):
            return NotifAction.continue_()

    class AsyncContinue(Handler):
        on_exception = ExceptionPolicy.KILL

        async def handle(self, ctx):
            return NotifAction.continue_()

    sb = sandlock.Sandbox(fs_readable=SYS_RO + [str(BENCH)])
    loop = [str(BENCH / "loop_open"), str(OPENAT_N_PY)]
    per_call, per_call_async = [], []
    for _ in range(REPS):  # interleaved: both see the same machine load
        r = sb.run_with_handlers(cmd=loop, handlers=[("openat", Continue())])
        per_call.append(float(as_text(r.stdout).strip()))
        r = sb.run_with_handlers(cmd=loop, handlers=[("openat", AsyncContinue())])
        per_call_async.append(float(as_text(r.stdout).strip()))

    starts = []
    for _ in range(5):  # warm-up
        sb.run(["/bin/true"])
    for _ in range(STARTUP_RUNS):
        t0 = time.perf_counter_ns()
        sb.run(["/bin/true"])
        starts.append((time.perf_counter_ns() - t0) / 1e3)
    return {"openat_py_handler_ns": statistics.median(per_call),
            "openat_py_async_ns": statistics.median(per_call_async),
            "startup_python_us": statistics.median(starts)}


CONNECT_N = int(os.environ.get("BENCH_CONNECT_N", "500"))


def port_loop(body):
    """A python3 script: argv PORT N, body (indented, names `port`) run N
    times; prints ns per round."""
    return ("import socket, sys, time\nport, n = int(sys.argv[1]), int(sys.argv[2])\n"
            "t0 = time.perf_counter_ns()\nfor _ in range(n):\n%s"
            "print((time.perf_counter_ns() - t0) / n)\n" % body)


CONNECT_LOOP = port_loop("    s = socket.socket()\n    s.connect((\"127.0.0.1\", port))\n"
                         "    s.close()\n")


def connect_figures():
    """ns per connect+close to a local listener (python3 loop): bare, an
    IP rule (on-behalf connect), a bare port rule (also on behalf); ns per
    netlink route socket, bare and sandboxed.  Each
    run gets a fresh listener that never accepts: its connects wait in a
    backlog deeper than the loop, so no accepting thread sets the pace."""
    import socket
    sys.path.insert(0, str(REPO / "python"))
    import sandlock

    def one(make_box):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4096)
        port = srv.getsockname()[1]
        argv = ["/usr/bin/python3", "-c", CONNECT_LOOP, str(port), str(CONNECT_N)]
        try:
            if make_box is None:
                return float(subprocess.run(argv, capture_output=True, text=True,
                                            check=True).stdout)
            return float(as_text(make_box(port).run(argv).stdout))
        finally:
            srv.close()

    variants = {
        "connect_bare_ns": None,
        "connect_ip_rule_ns": lambda p: sandlock.Sandbox(
            fs_readable=SYS_RO, net_allow=["tcp://127.0.0.1:%d" % p]),
        "connect_port_rule_ns": lambda p: sandlock.Sandbox(fs_readable=SYS_RO, net_allow=[p]),
    }
    fig = {k: statistics.median(one(v) for _ in range(REPS)) for k, v in variants.items()}
    argv = ["/usr/bin/python3", "-c", NETLINK_LOOP, str(CONNECT_N)]
    fig["netlink_bare_ns"] = statistics.median(
        float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        for _ in range(REPS))
    fig["netlink_sandbox_ns"] = statistics.median(
        float(as_text(sandlock.Sandbox(fs_readable=SYS_RO).run(argv).stdout))
        for _ in range(REPS))
    return fig


NETLINK_LOOP = r"""
import socket, sys, time
n = int(sys.argv[1])
t0 = time.perf_counter_ns()
for _ in range(n):
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()
print((time.perf_counter_ns() - t0) / n)
"""


BIND_LOOP = port_loop("    s = socket.socket()\n    s.bind((\"127.0.0.1\", port))\n"
                      "    s.listen()\n    s.close()\n")


def bind_figures():
    """ns per socket+bind+listen+close on a granted port: bare, sandboxed,
    sandboxed without pidfd_getfd (nosysptrace), interleaved."""
    port = free_port()
    loop = ["/usr/bin/python3", "-c", BIND_LOOP, str(port), str(CONNECT_N)]
    box = [str(BUILD / "sandlock"), "run", *[a for d in SYS_RO for a in ("-r", d)],
           "--net-allow-bind", str(port), "--", *loop]
    variants = {"bind_bare_ns": loop, "bind_sandbox_ns": box,
                "bind_nogetfd_ns": [str(BUILD / "helpers" / "nosysptrace"), *box]}
    got = {k: [] for k in variants}
    for _ in range(REPS):
        for k, argv in variants.items():
            got[k].append(float(subprocess.run(argv, capture_output=True, text=True,
                                               check=True).stdout))
    return {k: statistics.median(v) for k, v in got.items()}


FORK_N = int(os.environ.get("BENCH_FORK_N", "1000"))
REFERENCE_FORK_US = 530.0  # upstream README: 1000 clones in ~530 ms


def bare_fork_loop(n):
    """What fork(n) does, minus the sandbox: n os.fork() children, each
    writing its id to its own pipe; read every pipe to its end, reap."""
    kids = []
    for i in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"%d\n" % i)
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    outs = []
    for pid, r in kids:
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        os.waitpid(pid, 0)
        outs.append(b"".join(chunks))
    return outs


def fork_figures():
    """us per clone: Sandbox.fork(FORK_N) to every Result, and the bare
    loop, interleaved so both see the same machine load."""
    sys.path.insert(0, str(REPO / "python"))
    import sandlock

    sb = sandlock.Sandbox(fs_readable=SYS_RO, work_fn=print)
    want = [b"%d\n" % i for i in range(FORK_N)]
    sandboxed, bare = [], []
    for _ in range(REPS):
        t0 = time.perf_counter_ns()
        with sb.fork(FORK_N) as clones:
            got = [r.stdout for r in clones.wait()]
        sandboxed.append((time.perf_counter_ns() - t0) / 1e3 / FORK_N)
        t0 = time.perf_counter_ns()
        got_bare = bare_fork_loop(FORK_N)
        bare.append((time.perf_counter_ns() - t0) / 1e3 / FORK_N)
        if got != want or got_bare != want:
            raise RuntimeError("fork bench: wrong clone output")
    return {"fork_clone_us": statistics.median(sandboxed),
            "fork_bare_us": statistics.median(bare)}
UNTAR_FILES = int(os.environ.get("BENCH_UNTAR_FILES", "2000"))


def cow_figures():
    """The COW workdir's cost: an openat loop and an untar, bare vs COW."""
    import io
    import shutil
    import tarfile
    import tempfile
    sys.path.insert(0, str(REPO / "python"))
    import sandlock

    top = tempfile.mkdtemp(prefix="sandlock-bench-cow-", dir="/tmp")
    try:
        work = os.path.join(top, "work")
        os.mkdir(work)
        target = os.path.join(work, "file")
        with open(target, "w") as f:
            f.write("x\n")
        tarball = os.path.join(top, "tree.tar")
        with tarfile.open(tarball, "w") as t:
            for i in range(UNTAR_FILES):
                data = b"int x%d;\n" % i
                info = tarfile.TarInfo("src/d%02d/f%04d.c" % (i % 40, i))
                info.size, info.mode = len(data), 0o644
                t.addfile(info, io.BytesIO(data))
        loop = [str(BENCH / "loop_open"), str(OPENAT_N)]
        ro = SYS_RO + [str(BENCH), tarball]
        plain = sandlock.Sandbox(fs_readable=ro + [work], cwd=work)
        cow = sandlock.Sandbox(fs_readable=ro, workdir=work, cwd=work, on_exit="abort")
        staged = ["/bin/sh", "-c", 'echo y >> file && exec "$0" "$1" file'] + loop

        def ns(box, argv):
            if box is None:
                return float(subprocess.run(argv, capture_output=True, check=True,
                                            text=True, cwd=work).stdout)
            r = box.run(argv)
            assert r.success, r.stderr
            return float(as_text(r.stdout))

        def untar_ms(box):
            dest = tempfile.mkdtemp(dir=top)
            argv = ["/bin/tar", "xf", tarball]
            t0 = time.perf_counter()
            if box is None:
                subprocess.run(argv, cwd=dest, check=True)
            else:
                r = box(dest).run(argv)
                assert r.success, r.stderr
            ms = (time.perf_counter() - t0) * 1e3
            shutil.rmtree(dest)
            return ms

        def writable(d):
            return sandlock.Sandbox(fs_readable=ro, fs_writable=[d], cwd=d)

        def cow_box(action):
            return lambda d: sandlock.Sandbox(fs_readable=ro, workdir=d, cwd=d, on_exit=action)

        runs = {k: [] for k in ("cow_open_bare_ns", "cow_open_plain_ns", "cow_open_lower_ns",
                                "cow_open_upper_ns", "cow_untar_bare_ms", "cow_untar_plain_ms",
                                "cow_untar_abort_ms", "cow_untar_commit_ms")}
        for _ in range(REPS):  # interleaved: every variant sees the same load
            runs["cow_open_bare_ns"].append(ns(None, loop + ["file"]))
            runs["cow_open_plain_ns"].append(ns(plain, loop + ["file"]))
            runs["cow_open_lower_ns"].append(ns(cow, loop + ["file"]))
            runs["cow_open_upper_ns"].append(ns(cow, staged))
            runs["cow_untar_bare_ms"].append(untar_ms(None))
            runs["cow_untar_plain_ms"].append(untar_ms(writable))
            runs["cow_untar_abort_ms"].append(untar_ms(cow_box("abort")))
            runs["cow_untar_commit_ms"].append(untar_ms(cow_box("commit")))
        return {k: statistics.median(v) for k, v in runs.items()}
    finally:
        shutil.rmtree(top, ignore_errors=True)
REDIS_N = int(os.environ.get("BENCH_REDIS_N", "50000"))


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def redis_once(sandboxed):
    """One redis-benchmark SET/GET run against a fresh server: {key: value}."""
    import socket
    port = free_port()
    server = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
              "--appendonly", "no", "--protected-mode", "no", "--loglevel", "warning"]
    if sandboxed:
        ro = [a for d in SYS_RO for a in ("-r", d)]
        server = [str(BUILD / "sandlock"), "run", *ro, "--net-allow-bind", str(port),
                  "--", *server]
    proc = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):  # until it listens (not a measurement)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set,get", "-n",
                              str(REDIS_N), "-q", "--csv"], capture_output=True, text=True,
                             check=True).stdout
    finally:
        proc.terminate()
        proc.wait()
    fig = {}
    for line in out.splitlines()[1:]:
        f = [x.strip('"') for x in line.split(",")]
        tag = "redis_%s_%s" % (f[0].lower(), "sandbox" if sandboxed else "bare")
        fig[tag + "_rps"] = float(f[1])
        fig[tag + "_p99_ms"] = float(f[6])
    return fig


def redis_figures():
    """Bare and sandboxed runs interleaved, medians: {} without redis."""
    import shutil
    if not (shutil.which("redis-server") and shutil.which("redis-benchmark")):
        print("redis figures skipped: no redis-server/redis-benchmark", file=sys.stderr)
        return {}
    runs = []
    for _ in range(REPS):
        runs.append(redis_once(False))
        runs.append(redis_once(True))
    keys = set().union(*runs)
    return {k: statistics.median(r[k] for r in runs if k in r) for k in keys}


def row(label, value, unit, *bases):
    """One figure and its ratio against each (name, value) in bases."""
    ratios = "  ".join(f"{value / b:6.2f}x {name}" for name, b in bases if b)
    return f"  {label:<40} {value:10.1f} {unit:<3} {ratios}"


def print_redis(fig):
    print(f"redis-server, redis-benchmark -t set,get -n {REDIS_N} from outside "
          f"(sandbox: --net-allow-bind PORT)")
    for op in ("set", "get"):
        b, sb = "redis_%s_bare" % op, "redis_%s_sandbox" % op
        print(row("%s bare" % op.upper(), fig[b + "_rps"], "r/s"))
        print(row("%s sandboxed" % op.upper(), fig[sb + "_rps"], "r/s",
                  ("of bare", fig[b + "_rps"])))
        print(row("%s p99 bare" % op.upper(), fig[b + "_p99_ms"], "ms"))
        print(row("%s p99 sandboxed" % op.upper(), fig[sb + "_p99_ms"], "ms",
                  ("of bare", fig[b + "_p99_ms"])))


def print_forkrt(fig):
    if "fork_bare_us" not in fig:
        return
    print(f"vfork, the child _exits (median per call, loop of {FORKRT_N})")
    bare = ("vs bare", fig["fork_bare_us"])
    for v, label in (("bare", "bare, no sandbox"),
                     ("untrapped", "sandboxed -P 0, fork not trapped"),
                     ("trapped", "sandboxed, max_processes: trapped")):
        print(row(label, fig["fork_%s_us" % v], "us", *(() if v == "bare" else (bare,))))
    print(f"  round trip of a trapped fork (trapped - untrapped): "
          f"{fig['fork_roundtrip_us']:.1f} us; supervisor CPU per trapped fork: "
          f"{fig['fork_supervisor_cpu_us']:.1f} us")


def main():
    fig = {}
    fig.update(run_c_bench("startup", STARTUP_RUNS, BUILD / "sandlock"))
    fig.update(run_c_bench("openat", OPENAT_N, REPS))
    fig.update(run_c_bench("openat", OPENAT_N, REPS, "onbehalf"))
    try:
        fig.update(python_figures())
    except Exception as e:  # report, but still print the C figures
        print(f"python variants failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(connect_figures())
    except Exception as e:
        print(f"connect figures failed: {type(e).__name__}: {e}", file=sys.stderr)
    try:
        fig.update(bind_figures())
    except Exception as e:
        print(f"bind figures failed: {type(e).__name__}: {e}", file=sys.stderr)
    try:
        fig.update(procvirt.figures())
    except Exception as e:
        print(f"procvirt figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(fork_figures())
    except Exception as e:
        print(f"fork figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(cow_figures())
    except Exception as e:
        print(f"cow figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(run_c_bench("forkrt", FORKRT_N, REPS))
    except Exception as e:
        print(f"forkrt figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(execs.figures())
    except Exception as e:
        print(f"exec figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(toolchains.figures())
    except Exception as e:
        print(f"toolchain figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(cowcalls.figures())
    except Exception as e:
        print(f"cowcalls figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(mcp_bench.figures())
    except Exception as e:
        print(f"mcp figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(httpproxy.figures())
    except Exception as e:
        print(f"http proxy figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    try:
        fig.update(redis_figures())
    except Exception as e:
        print(f"redis figures failed: {type(e).__name__}: {e}", file=sys.stderr)

    print(f"sandlock benchmarks (median of {REPS} runs for openat, "
          f"{STARTUP_RUNS} for startup)")
    print("startup of /bin/true (CLI: sandlock run -r /usr -r /lib -r /lib64 "
          "-r /bin -r /etc -- /bin/true)")
    bare = ("vs bare", fig["startup_bare_us"])
    floor = ("vs env", fig["startup_env_us"])
    c_abi = ("vs C ABI", fig["startup_sandboxed_us"])
    for key, label, bases in (
            ("startup_bare_us", "bare fork+exec", ()),
            ("startup_env_us", "env /bin/true (launcher floor)", (bare,)),
            ("startup_cli_us", "sandlock run (CLI)", (floor, bare)),
            ("startup_sandboxed_us", "C ABI sandlock_run", (bare,)),
            ("startup_python_us", "Python Sandbox.run", (c_abi, bare))):
        if key in fig:
            print(row(label, fig[key], "us", *bases))
    print(f"openat+close of /etc/hostname (per call, loop of {OPENAT_N}; "
          f"Python handler loop of {OPENAT_N_PY})")
    bare = ("vs bare", fig["openat_bare_ns"])
    for key, label in (("openat_bare_ns", "bare, no sandbox"),
                       ("openat_untrapped_ns", "sandboxed, openat not trapped"),
                       ("openat_c_handler_ns", "trapped, C handler CONTINUE"),
                       ("openat_c_deferred_ns", "trapped, deferred C handler CONTINUE"),
                       ("openat_py_handler_ns", "trapped, Python handler CONTINUE"),
                       ("openat_py_async_ns", "trapped, Python async handler CONTINUE")):
        if key in fig:
            print(row(label, fig[key], "ns", *(() if key == "openat_bare_ns" else (bare,))))
    if "openat_c_handler_ns" in fig:
        print(f"  notification round trip (C handler - untrapped): "
              f"{fig['openat_c_handler_ns'] - fig['openat_untrapped_ns']:.1f} ns")
    if "openat_py_async_ns" in fig:
        print(f"  async / sync Python handler: "
              f"{fig['openat_py_async_ns'] / fig['openat_py_handler_ns']:.2f}x")
    print("openat+close, race-free open on behalf vs CONTINUE (same batch)")
    bare = ("vs bare", fig["onbehalf_bare_ns"])
    cont = ("vs CONTINUE", fig["onbehalf_continue_ns"])
    for key, label, bases in (
            ("onbehalf_bare_ns", "bare, no sandbox", ()),
            ("onbehalf_continue_ns", "trapped, C handler CONTINUE", (bare,)),
            ("onbehalf_onbehalf_ns", "trapped, C handler open on behalf", (cont, bare))):
        print(row(label, fig[key], "ns", *bases))
    if "connect_bare_ns" in fig:
        print(f"TCP connect+close to 127.0.0.1 (per call, python3 loop of {CONNECT_N})")
        bare = ("vs bare", fig["connect_bare_ns"])
        for key, label in (("connect_bare_ns", "bare, no sandbox"),
                           ("connect_ip_rule_ns", "IP rule: trapped, on behalf"),
                           ("connect_port_rule_ns", "port rule: trapped, on behalf")):
            if key in fig:
                print(row(label, fig[key], "ns", *(() if key == "connect_bare_ns" else (bare,))))
        print(f"socket(AF_NETLINK, NETLINK_ROUTE)+close (per call, loop of {CONNECT_N})")
        print(row("bare, no sandbox", fig["netlink_bare_ns"], "ns"))
        print(row("sandboxed (the loopback-only view)", fig["netlink_sandbox_ns"], "ns",
                  ("vs bare", fig["netlink_bare_ns"])))
    if "bind_bare_ns" in fig:
        print(f"TCP socket+bind+listen+close on a granted port (per call, loop of {CONNECT_N})")
        bare = ("vs bare", fig["bind_bare_ns"])
        print(row("bare, no sandbox", fig["bind_bare_ns"], "ns"))
        print(row("sandboxed (Landlock checks the bind)", fig["bind_sandbox_ns"], "ns", bare))
        print(row("without pidfd_getfd: made, kept, performed", fig["bind_nogetfd_ns"], "ns",
                  bare))
    procvirt.report(fig, row)
    httpproxy.report(fig, row)
    if "fork_clone_us" in fig:
        print(f"COW fork: time per clone of Sandbox.fork({FORK_N}) to every Result")
        bare = ("vs bare", fig["fork_bare_us"])
        print(row("bare os.fork() loop (pipe per child)", fig["fork_bare_us"], "us"))
        print(row("Sandbox.fork (confined clones)", fig["fork_clone_us"], "us", bare,
                  ("vs reference 530 us", REFERENCE_FORK_US)))
    if "cow_open_bare_ns" in fig:
        print(f"copy-on-write workdir: openat+close of a workdir file (loop of {OPENAT_N})")
        bare = ("vs bare", fig["cow_open_bare_ns"])
        plain = ("vs no COW", fig["cow_open_plain_ns"])
        for key, label, bases in (
                ("cow_open_bare_ns", "bare, no sandbox", ()),
                ("cow_open_plain_ns", "sandboxed, no workdir", (bare,)),
                ("cow_open_lower_ns", "COW, real file (passed on)", (plain, bare)),
                ("cow_open_upper_ns", "COW, staged file (upper, injected)", (plain, bare))):
            print(row(label, fig[key], "ns", *bases))
        print(f"copy-on-write workdir: tar x of {UNTAR_FILES} small files (whole run)")
        bare = ("vs bare", fig["cow_untar_bare_ms"])
        plain = ("vs no COW", fig["cow_untar_plain_ms"])
        for key, label, bases in (
                ("cow_untar_bare_ms", "bare, no sandbox", ()),
                ("cow_untar_plain_ms", "sandboxed, fs_writable dir", (bare,)),
                ("cow_untar_abort_ms", "COW workdir, ABORT", (plain, bare)),
                ("cow_untar_commit_ms", "COW workdir, COMMIT", (plain, bare))):
            print(row(label, fig[key], "ms", *bases))
        print(f"  commit of the {UNTAR_FILES}-file tree (COMMIT - ABORT): "
              f"{fig['cow_untar_commit_ms'] - fig['cow_untar_abort_ms']:.1f} ms")
    print_forkrt(fig)
    execs.report(fig, row)
    toolchains.report(fig, row)
    cowcalls.report(fig, row)
    mcp_bench.report(fig, row)
    if "redis_set_bare_rps" in fig:
        print_redis(fig)
    if "openat_py_handler_ns" not in fig:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
