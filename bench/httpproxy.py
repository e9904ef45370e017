"""The HTTP proxy (docs/http.md) for bench/run.py, all in one invocation on
loopback, the client always inside `sandlock run` so that only the proxy
differs:

  direct    --net-allow 127.0.0.1:PORT: the connect is performed on behalf,
            then bytes flow guest <-> server
  proxied   --http-allow "* localhost/*" --http-port PORT: every request
            judged and streamed by the supervisor's proxy
  tls       the same against an HTTPS server: direct TLS vs TLS terminated
            by the proxy (--http-inject-ca, per-run CA)

Figures: MB/s of GETs of 1 MiB bodies over one keep-alive connection
(curl), p50 us of a small GET (http.client loop of LAT_N on one connection),
and MB/s of one BIG_MB download through the proxy with the supervisor's
peak RSS.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("SANDLOCK_BUILD") or REPO / "build")
SYS_RO = [d for d in ("/usr", "/bin", "/lib", "/lib64", "/etc") if os.path.exists(d)]
REPS = int(os.environ.get("BENCH_REPS", "5"))
MB_N = int(os.environ.get("BENCH_HTTP_MB_N", "200"))      # 1 MiB GETs per run
LAT_N = int(os.environ.get("BENCH_HTTP_LAT_N", "500"))    # small GETs per run
BIG_MB = int(os.environ.get("BENCH_HTTP_BIG_MB", "1024"))  # one big download

LAT = ("import http.client, ssl, sys, time\n"
       "port, n, tls, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == '1', sys.argv[4]\n"
       "c = (http.client.HTTPSConnection('localhost', port, context=ssl.create_default_context("
       "cafile=ca)) if tls else http.client.HTTPConnection('localhost', port))\n"
       "c.request('GET', '/ok/warm'); c.getresponse().read()\n"
       "ts = []\n"
       "for _ in range(n):\n"
       "    t = time.perf_counter_ns(); c.request('GET', '/ok/x'); c.getresponse().read()\n"
       "    ts.append(time.perf_counter_ns() - t)\n"
       "ts.sort(); print(ts[len(ts) // 2] / 1000)\n")


def _sandlock(args, cmd, env=None):
    ro = sum((["-r", d] for d in SYS_RO), [])
    return [str(BUILD / "sandlock"), "run", "-w", "/dev/null", *ro, *args, "--", *cmd]


def _modes(port, pki, tls):
    if not tls:
        return {"direct": ["--net-allow", "127.0.0.1:%d" % port],
                "proxied": ["--http-allow", "* localhost/*", "--http-port", str(port)]}
    return {"direct": ["-r", pki, "--net-allow", "127.0.0.1:%d" % port],
            "proxied": ["-r", pki, "--http-allow", "* localhost/*", "--http-port", str(port),
                        "--http-inject-ca", os.path.join(pki, "bundle.crt")]}


def _throughput(argv, env):
    t = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return MB_N / (time.perf_counter() - t)


def _peak_rss_run(argv, env):
    """Run argv, sampling its RSS (the CLI is the supervisor): (s, peak KiB)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while p.poll() is None:
        try:
            with open("/proc/%d/status" % p.pid) as f:
                peak = max([peak] + [int(l.split()[1]) for l in f if l.startswith("VmRSS:")])
        except OSError:
            pass
        time.sleep(0.02)
    return time.perf_counter() - t, peak


def figures():
    sys.path.insert(0, str(REPO / "tests" / "python"))
    from httpfixture import Origin, make_ca, tls_origin  # loopback servers of the tests

    pki = tempfile.mkdtemp(prefix="sandlock-bench-http-", dir="/tmp")
    fig = {}
    servers = []
    try:
        ca, _, crt, key = make_ca(pki)
        shutil.copy("/etc/ssl/certs/ca-certificates.crt", os.path.join(pki, "bundle.crt"))
        env = dict(os.environ, SSL_CERT_FILE=ca)  # the proxy trusts the test server
        for tls in (False, True):
            o = tls_origin(crt, key) if tls else Origin()
            servers.append(o)
            scheme = "https" if tls else "http"
            urls = ["%s://localhost:%d/big/%d" % (scheme, o.port, 1 << 20)] * MB_N
            for mode, args in _modes(o.port, pki, tls).items():
                # Direct TLS trusts the test CA; through the proxy, the run's
                # CA spliced into the bundle.
                cafile = os.path.join(pki, "bundle.crt") if mode == "proxied" else ca
                curl = ["/usr/bin/curl", "-s", "--cacert", cafile, "-o", "/dev/null"]
                pre = "%s_%s" % ("tls" if tls else "http", mode)
                fig[pre + "_mbps"] = statistics.median(
                    _throughput(_sandlock(args, curl + urls), env)
                    for _ in range(REPS))
                lat = _sandlock(args, ["/usr/bin/python3", "-c", LAT, str(o.port), str(LAT_N),
                                       "1" if tls else "0", cafile])
                fig[pre + "_p50_us"] = statistics.median(
                    float(subprocess.run(lat, check=True, capture_output=True, text=True,
                                         env=env).stdout) for _ in range(REPS))
            if not tls:
                big = _sandlock(_modes(o.port, pki, False)["proxied"],
                                curl + ["http://localhost:%d/big/%d" % (o.port, BIG_MB << 20)])
                secs, peak = _peak_rss_run(big, env)
                fig["http_big_mbps"] = BIG_MB / secs
                fig["http_big_rss_kib"] = peak
    finally:
        for o in servers:
            o.close()
        shutil.rmtree(pki, ignore_errors=True)
    return fig


def report(fig, row):
    """Print the section with bench/run.py's row(); nothing if not measured."""
    if "http_direct_mbps" not in fig:
        return
    print(f"HTTP proxy: GET of 1 MiB bodies x{MB_N} (curl, keep-alive); small GET p50 "
          f"(x{LAT_N}, one connection); both inside sandlock run")
    for pre, what in (("http", "HTTP"), ("tls", "HTTPS")):
        direct = ("vs direct", fig[pre + "_direct_mbps"])
        print(row(f"{what} direct", fig[pre + "_direct_mbps"], "MB/s"))
        print(row(f"{what} proxied" + (" (TLS terminated)" if pre == "tls" else ""),
                  fig[pre + "_proxied_mbps"], "MB/s", direct))
        print(row(f"{what} direct p50", fig[pre + "_direct_p50_us"], "us"))
        print(row(f"{what} proxied p50", fig[pre + "_proxied_p50_us"], "us",
                  ("vs direct", fig[pre + "_direct_p50_us"])))
        print(f"  added p50 latency ({what}): "
              f"{fig[pre + '_proxied_p50_us'] - fig[pre + '_direct_p50_us']:.1f} us")
    print(row(f"one {BIG_MB} MiB download, proxied", fig["http_big_mbps"], "MB/s"))
    print(f"  supervisor peak RSS during it: {fig['http_big_rss_kib'] / 1024:.1f} MiB")
