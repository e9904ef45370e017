"""The HTTP proxy (docs/http.md), plain HTTP: requests judged by method, host
and path, on real sandboxed programs (curl, Python urllib and raw sockets)
against a loopback origin server whose log shows what reached it."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import PY, SYSTEM
from httpfixture import Origin, free_port

import sandlock

BUILD = os.environ.get("SANDLOCK_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
SANDLOCK = os.path.join(BUILD, "sandlock")
CURL = "/usr/bin/curl"


@pytest.fixture
def origin():
    o = Origin()
    yield o
    o.close()


def run(*args, timeout=60, env=None):
    ro = []
    for d in SYSTEM:
        ro += ["-r", d]
    ro += ["-w", "/dev/null"]
    return subprocess.run([SANDLOCK, "run", *ro, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def curl(url, *extra):
    return [CURL, "-s", "-m", "10", "-o", "-", "-w", "\\n%{http_code}\\n", *extra, url]


def code_and_body(out):
    body, _, code = out.rstrip("\n").rpartition("\n")
    return int(code), body


# A program run inside: raw HTTP over one connection, printing every reply.
RAW = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode("latin-1"))
"""


def raw(origin, request, *rules):
    return run(*rules, "--http-port", str(origin.port), "--", PY, "-c", RAW, str(origin.port),
               request)


def statuses(text):
    return [int(l.split()[1]) for l in text.splitlines() if l.startswith("HTTP/1.")]


# ------------------------------------------------------------------ judging

def test_allow_and_deny_by_method_host_and_path(origin):
    p = origin.port
    urls = {"/ok/a": 200, "/ok/secret/x": 403, "/no/b": 403}
    script = "; ".join("%s" % " ".join("'%s'" % a for a in curl("http://localhost:%d%s" % (p, u)))
                       for u in urls)
    r = run("--http-port", str(p), "--http-allow", "GET localhost/ok/*",
            "--http-deny", "* */ok/secret/*", "--", "/bin/sh", "-c",
            script + "; " + " ".join("'%s'" % a for a in curl("http://localhost:%d/ok/a" % p,
                                                              "-X", "POST", "-d", "x")))
    assert r.returncode == 0, r.stderr
    outs = r.stdout.split("\n")
    codes = [int(l) for l in outs if l.isdigit()]
    assert codes == [200, 403, 403, 403], r.stdout
    # The 403 bodies say which rule refused the request.
    assert "http_deny rule '* */ok/secret/*'" in r.stdout
    assert "POST localhost/ok/a refused: no http_allow rule matches it" in r.stdout
    # Only the allowed request reached the server.
    assert origin.paths() == ["/ok/a"]


def test_outside_the_sandbox_every_path_is_served(origin):
    # Control for the test above: the server itself would answer them all.
    for u in ("/ok/a", "/ok/secret/x", "/no/b"):
        r = subprocess.run(curl("http://localhost:%d%s" % (origin.port, u)),
                           capture_output=True, text=True)
        assert code_and_body(r.stdout)[0] == 200


def test_python_urllib_and_the_sandbox_keywords(origin):
    code = ("import urllib.request, urllib.error, sys\n"
            "for u in sys.argv[1:]:\n"
            "    try:\n"
            "        print(urllib.request.urlopen(u, timeout=10).status)\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print(e.code, e.read().decode().strip())\n")
    base = "http://localhost:%d" % origin.port
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=60, http_ports=[origin.port],
                          http_allow=["GET localhost/ok/*"], http_deny=["* */ok/admin/*"])
    r = sb.run([PY, "-c", code, base + "/ok/1", base + "/ok/admin/2", base + "/zz"])
    out = r.stdout.decode().splitlines()
    assert out[0] == "200"
    assert out[1].startswith("403") and "http_deny rule '* */ok/admin/*'" in out[1]
    assert out[2].startswith("403") and "no http_allow rule" in out[2]
    assert origin.paths() == ["/ok/1"]


def test_bad_rules_are_refused_naming_the_flag_and_keyword():
    r = run("--http-allow", "GET", "--", "/bin/true")
    assert r.returncode == 125 and "--http-allow 'GET'" in r.stderr
    with pytest.raises(sandlock.PolicyError, match="http_deny"):
        sandlock.Sandbox(http_deny=["GET example.com/a/../b"])
    with pytest.raises(sandlock.PolicyError, match="needs at least one http_allow"):
        sandlock.Sandbox(fs_readable=SYSTEM, http_ports=[8080])


def test_path_normalization_cannot_sneak_past_a_deny(origin):
    p = str(origin.port)
    for path in ("/ok/../admin/x", "/ok/%2e%2e/admin/x", "/ok//..//admin/x", "/%61dmin/x"):
        r = raw(origin, "GET %s HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n"
                % path, "--http-allow", "GET localhost/*", "--http-deny", "* localhost/admin/*")
        assert statuses(r.stdout) == [403], (path, r.stdout, r.stderr)
    assert origin.paths() == []
    r = raw(origin, "GET /ok/x HTTP/1.1\\r\\nHost: localhost:%s\\r\\nConnection: close\\r\\n\\r\\n" % p,
            "--http-allow", "GET localhost/*", "--http-deny", "* localhost/admin/*")
    assert statuses(r.stdout) == [200]


# ------------------------------------------------------------------ smuggling

@pytest.mark.parametrize("request_text,status", [
    # Two Host headers: which one would the server use?
    ("GET /ok/a HTTP/1.1\\r\\nHost: localhost\\r\\nHost: evil.test\\r\\n\\r\\n", 400),
    # Absolute form: its authority is the host judged; a Host that differs is refused.
    ("GET http://localhost:{p}/no/x HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n", 403),
    ("GET http://evil.test:{p}/ok/a HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n", 400),
    ("GET http://localhost:{p}/ok/a HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n", 200),
    # A Host port other than the one connected to.
    ("GET /ok/a HTTP/1.1\\r\\nHost: localhost:22\\r\\n\\r\\n", 400),
    # No Host at all.
    ("GET /ok/a HTTP/1.1\\r\\n\\r\\n", 400),
    # CONNECT tunnels are not proxied.
    ("CONNECT localhost:{p} HTTP/1.1\\r\\nHost: localhost:{p}\\r\\n\\r\\n", 405),
    # Content-Length and Transfer-Encoding together: the parser refuses.
    ("POST /ok/a HTTP/1.1\\r\\nHost: localhost\\r\\nContent-Length: 3\\r\\n"
     "Transfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n", 400),
])
def test_host_smuggling_and_odd_request_lines(origin, request_text, status):
    r = raw(origin, request_text.format(p=origin.port), "--http-allow", "* localhost/ok/*")
    assert statuses(r.stdout)[:1] == [status], (r.stdout, r.stderr)
    if status != 200:
        assert origin.paths() == []


def test_pipelined_requests_are_each_judged(origin):
    req = ("GET /ok/1 HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"
           "GET /no/2 HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"
           "GET /ok/3 HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"
           "DELETE /ok/4 HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
    r = raw(origin, req, "--http-allow", "GET localhost/ok/*")
    assert statuses(r.stdout) == [200, 403, 200, 403], r.stdout
    assert origin.paths() == ["/ok/1", "/ok/3"]


def test_keep_alive_connection_carries_several_judged_requests(origin):
    code = ("import http.client, sys\n"
            "c = http.client.HTTPConnection('localhost', int(sys.argv[1]), timeout=10)\n"
            "for p in ('/ok/1', '/ok/2', '/no/3', '/ok/4'):\n"
            "    c.request('GET', p)\n"
            "    r = c.getresponse(); r.read()\n"
            "    print(r.status, c.sock.getsockname()[1] if c.sock else None)\n")
    r = run("--http-port", str(origin.port), "--http-allow", "GET localhost/ok/*", "--",
            PY, "-c", code, str(origin.port))
    lines = [l.split() for l in r.stdout.splitlines()]
    assert [l[0] for l in lines] == ["200", "200", "403", "200"], (r.stdout, r.stderr)
    assert lines[0][1] == lines[1][1] == lines[2][1]  # one connection for the first three
    assert origin.paths() == ["/ok/1", "/ok/2", "/ok/4"]


# ------------------------------------------------------------------ bodies

def test_upload_chunked_and_expect_100_continue(origin, tmpdir_path):
    big = os.path.join(tmpdir_path, "up")
    with open(big, "wb") as f:
        f.truncate(20 << 20)
    p = origin.port
    sh = ("%s -s -m 30 -T %s -H 'Transfer-Encoding: chunked' http://localhost:%d/up/1; "
          "%s -s -m 30 --data-binary @%s -H 'Expect: 100-continue' http://localhost:%d/up/2"
          % (CURL, big, p, CURL, big, p))
    r = run("-r", tmpdir_path, "--http-port", str(p), "--http-allow", "* localhost/up/*",
            "--", "/bin/sh", "-c", sh)
    assert r.stdout == "got=%d\ngot=%d\n" % (20 << 20, 20 << 20), (r.stdout, r.stderr)


def test_large_download_streams_with_flat_memory(origin):
    n = 200 << 20
    cmd = [SANDLOCK, "run", "-w", "/dev/null"] + sum((["-r", d] for d in SYSTEM), []) + [
        "--http-port", str(origin.port), "--http-allow", "GET localhost/big/*", "--",
        CURL, "-s", "-m", "60", "-o", "/dev/null", "-w", "%{size_download}",
        "http://localhost:%d/big/%d" % (origin.port, n)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            with open("/proc/%d/status" % proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        peak = max(peak, int(line.split()[1]))
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    assert out == str(n), err
    assert peak < 64 * 1024, "the supervisor's RSS reached %d KiB" % peak


# ------------------------------------------------------------------ addresses

def test_direct_connect_to_other_ports_is_still_refused(origin):
    other = Origin()
    try:
        code = ("import socket, sys\n"
                "try:\n"
                "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n"
                "    print('connected')\n"
                "except OSError as e:\n"
                "    print('refused', e.errno)\n")
        r = run("--http-port", str(origin.port), "--http-allow", "GET localhost/*", "--",
                PY, "-c", code, str(other.port))
        assert r.stdout.strip() == "refused 13", r.stderr
    finally:
        other.close()


def test_no_rebinding_into_loopback_or_metadata_without_a_grant(origin):
    # A wildcard host grants no address: names resolving to 127.0.0.1 and the
    # metadata address are refused by the proxy, before any connect.
    for host in ("localhost", "169.254.169.254", "127.0.0.1"):
        req = "GET /ok/a HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % host
        r = raw(origin, req, "--http-allow", "GET */*")
        assert statuses(r.stdout) == [403], (host, r.stdout)
        assert "no rule grants" in r.stdout
    assert origin.paths() == []
    # Granted by naming the host in a rule: reached.
    req = "GET /ok/a HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n"
    r = raw(origin, req, "--http-allow", "GET */*", "--http-allow", "GET localhost/ok/*")
    assert statuses(r.stdout) == [200]


def test_tcp_fast_open_cannot_go_around_the_proxy(origin):
    code = ("import socket, sys\n"
            "s = socket.socket()\n"
            "try:\n"
            "    s.sendto(b'GET /no/x HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n', "
            "socket.MSG_FASTOPEN, ('127.0.0.1', int(sys.argv[1])))\n"
            "    print('sent')\n"
            "except OSError as e:\n"
            "    print('refused', e.errno)\n")
    r = run("--http-port", str(origin.port), "--http-allow", "GET localhost/ok/*", "--",
            PY, "-c", code, str(origin.port))
    assert r.stdout.startswith("refused"), (r.stdout, r.stderr)
    time.sleep(0.3)
    assert origin.paths() == []


# ------------------------------------------------------------------ robustness

def test_half_open_flood_and_slowloris_stall_nothing(origin):
    # 300 connections that never send a byte, 20 that send a byte a second:
    # meanwhile a real request is served and the notification loop answers.
    code = ("import socket, sys, time, urllib.request, threading\n"
            "p = int(sys.argv[1])\n"
            "idle = [socket.create_connection(('127.0.0.1', p)) for _ in range(300)]\n"
            "slow = [socket.create_connection(('127.0.0.1', p)) for _ in range(20)]\n"
            "def drip():\n"
            "    for ch in 'GET /ok/slow HTTP/1.1\\r\\n':\n"
            "        for s in slow:\n"
            "            try: s.send(ch.encode())\n"
            "            except OSError: pass\n"
            "        time.sleep(1)\n"
            "threading.Thread(target=drip, daemon=True).start()\n"
            "t = time.time()\n"
            "print(urllib.request.urlopen('http://localhost:%d/ok/live' % p, timeout=10).status)\n"
            "for _ in range(200): open('/etc/hostname').close()\n"
            "print('%.2f' % (time.time() - t))\n")
    r = run("--http-port", str(origin.port), "--http-allow", "GET localhost/ok/*", "--",
            PY, "-c", code, str(origin.port), timeout=90)
    lines = r.stdout.split()
    assert lines[0] == "200", (r.stdout, r.stderr)
    assert float(lines[1]) < 5.0
    assert origin.paths() == ["/ok/live"]


def test_egress_log_has_a_line_per_request(origin, tmpdir_path):
    log = os.path.join(tmpdir_path, "egress.jsonl")
    p = origin.port
    r = run("--http-port", str(p), "--http-allow", "GET localhost/ok/*", "--http-log", log,
            "--", "/bin/sh", "-c", "%s -s http://localhost:%d/ok/a >/dev/null; "
            "%s -s http://localhost:%d/no/b >/dev/null" % (CURL, p, CURL, p))
    assert r.returncode == 0, r.stderr
    recs = [json.loads(l) for l in open(log)]
    assert [(x["method"], x["host"], x["path"], x["status"], x["decision"]) for x in recs] == [
        ("GET", "localhost", "/ok/a", 200, "allow"), ("GET", "localhost", "/no/b", 403, "deny")]
    assert recs[0]["rule"] == "GET localhost/ok/*" and recs[0]["bytes_in"] > 0
    assert all(x["pid"] > 0 for x in recs)


def test_toml_http_section(origin, tmpdir_path):
    prof = os.path.join(tmpdir_path, "p.toml")
    with open(prof, "w") as f:
        f.write('[filesystem]\nread = %s\n[http]\nports = [%d]\nallow = ["GET localhost/ok/*"]\n'
                % (json.dumps(SYSTEM), origin.port))
    r = subprocess.run([SANDLOCK, "run", "--profile-file", prof, "--", "/bin/sh", "-c",
                        "%s -s http://localhost:%d/ok/a; %s -s http://localhost:%d/no/b"
                        % (CURL, origin.port, CURL, origin.port)],
                       capture_output=True, text=True, timeout=60)
    assert "path=/ok/a" in r.stdout and "no http_allow rule" in r.stdout, r.stderr
    assert list(sandlock.load_profile(path=prof).http_allow) == ["GET localhost/ok/*"]


def test_trace_shows_each_request(origin):
    p = origin.port
    r = run("--trace", "--http-port", str(p), "--http-allow", "GET localhost/ok/*", "--",
            "/bin/sh", "-c", "%s -s -o /dev/null http://localhost:%d/ok/a; "
            "%s -s -o /dev/null http://localhost:%d/no/b" % (CURL, p, CURL, p))
    recs = [json.loads(l) for l in r.stderr.splitlines() if l.startswith("{")]
    http = [(x["path"], x["decision"]) for x in recs if x.get("event") == "http"]
    assert http == [("/ok/a", "allow"), ("/no/b", "deny")], r.stderr


def test_learn_proposes_http_rules(origin, tmpdir_path):
    p = origin.port
    r = subprocess.run([SANDLOCK, "learn", "--http-port", str(p), "--net-allow",
                        "127.0.0.1:%d" % p, "--", "/bin/sh", "-c",
                        "for u in /simple/a/ /simple/b/ /; do %s -s http://localhost:%d$u; done; "
                        "%s -s -X POST -d x http://localhost:%d/api" % (CURL, p, CURL, p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = os.path.join(tmpdir_path, "learned.toml")
    with open(prof, "w") as f:
        f.write(r.stdout)
    sb = sandlock.load_profile(path=prof)
    assert sorted(sb.http_allow) == ["GET localhost/", "GET localhost/simple/*",
                                     "POST localhost/api"], r.stdout
    # The profile works: the same requests pass, others are refused.
    origin.seen.clear()
    out = subprocess.run([SANDLOCK, "run", "-w", "/dev/null", "--profile-file", prof, "--",
                          "/bin/sh", "-c", "%s -s http://localhost:%d/simple/c/; "
                          "%s -s http://localhost:%d/admin" % (CURL, p, CURL, p)],
                         capture_output=True, text=True, timeout=60)
    assert "path=/simple/c/" in out.stdout and "no http_allow rule" in out.stdout, out
    assert origin.paths() == ["/simple/c/"]


def test_check_reports_tls_support():
    out = subprocess.run([SANDLOCK, "check"], capture_output=True, text=True).stdout
    assert "HTTP proxy:" in out
    assert [l for l in out.splitlines() if "TLS interception" in l][0].split()[2] == "yes"


def test_git_clone_over_http_through_the_proxy(tmpdir_path):
    # A dumb-HTTP git repository served from a directory: clone allowed by
    # path, and a push-like POST to it refused.
    import functools
    import http.server
    srv_dir = os.path.join(tmpdir_path, "srv")
    work = os.path.join(tmpdir_path, "work")
    os.makedirs(srv_dir)
    git = lambda *a, cwd=None: subprocess.run(["git", *a], cwd=cwd, check=True,
                                              capture_output=True)
    git("init", "-q", work)
    with open(os.path.join(work, "f"), "w") as f:
        f.write("hello\n")
    git("-c", "user.email=t@t", "-c", "user.name=t", "-C", work, "add", "f")
    git("-c", "user.email=t@t", "-c", "user.name=t", "-C", work, "commit", "-qm", "x")
    git("clone", "-q", "--bare", work, os.path.join(srv_dir, "r.git"))
    git("-C", os.path.join(srv_dir, "r.git"), "update-server-info")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=srv_dir)
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        p = httpd.server_address[1]
        out = os.path.join(tmpdir_path, "out")
        os.makedirs(out)
        r = run("-w", out, "--cwd", out, "--http-port", str(p), "--http-allow", "GET localhost/r.git/*",
                "--env", "HOME=" + out, "--", "/bin/sh", "-c",
                "git clone -q http://localhost:%d/r.git %s/c && cat %s/c/f; "
                "git ls-remote http://localhost:%d/other.git 2>&1 | head -1"
                % (p, out, out, p), timeout=120)
        assert r.stdout.startswith("hello\n"), (r.stdout, r.stderr)
        assert "refused: no http_allow rule matches it" in r.stdout
    finally:
        httpd.shutdown()
        httpd.server_close()
