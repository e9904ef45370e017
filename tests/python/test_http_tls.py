"""The HTTP proxy over TLS (docs/http.md "HTTPS") and its credentials
("Credentials the command never sees"), against loopback servers with a
test CA made by openssl at test time."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import PY, SYSTEM
from httpfixture import Origin, make_ca, tls_origin

import sandlock

BUILD = os.environ.get("SANDLOCK_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
SANDLOCK = os.path.join(BUILD, "sandlock")
CURL = "/usr/bin/curl"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pki"))
    ca, cakey, crt, key = make_ca(d)
    bundle = os.path.join(d, "bundle.crt")
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", bundle)
    return {"dir": d, "ca": ca, "cakey": cakey, "crt": crt, "key": key, "bundle": bundle}


@pytest.fixture
def tls(pki):
    o = tls_origin(pki["crt"], pki["key"])
    yield o
    o.close()


@pytest.fixture
def origin():
    o = Origin()
    yield o
    o.close()


def run(pki, *args, env=None, timeout=60):
    ro = ["-w", "/dev/null", "-r", pki["dir"]]
    for d in SYSTEM:
        ro += ["-r", d]
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([SANDLOCK, "run", *ro, *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


def curl_all(*urls, cacert, extra=()):
    """A shell line running curl on each url, printing its exit code."""
    return "; ".join("%s -s -m 10 --cacert %s %s %s; echo \" rc=$?\""
                     % (CURL, cacert, " ".join(extra), u) for u in urls)


# ------------------------------------------------------------------ SNI only

def test_sni_only_admits_allowed_names_and_refuses_the_rest(pki, tls):
    p = tls.port
    sh = curl_all("https://localhost:%d/any/path" % p, "https://127.0.0.1:%d/x" % p,
                  cacert=pki["ca"])
    r = run(pki, "--http-port", str(p), "--http-allow", "GET localhost/ok/*", "--",
            "/bin/sh", "-c", sh)
    # Without a CA nothing but the name can be judged: any path of an
    # admitted host is reached; no SNI (an IP literal) is refused.
    assert "path=/any/path\n rc=0\n rc=35" in r.stdout, r.stdout
    assert tls.paths() == ["/any/path"]


def test_sni_only_deny_rule_naming_the_host_refuses_it(pki, tls):
    sh = curl_all("https://localhost:%d/ok/a" % tls.port, cacert=pki["ca"])
    r = run(pki, "--http-port", str(tls.port), "--http-allow", "GET localhost/ok/*",
            "--http-deny", "POST localhost/admin/*", "--", "/bin/sh", "-c", sh)
    assert r.stdout.strip().endswith("rc=35"), r.stdout
    assert tls.paths() == []


def test_sni_naming_another_host_cannot_reach_the_address_connected_to(pki, tls):
    # The client hello says "evil.test" while connecting to the allowed
    # server's address: the proxy judges evil.test (not allowed) and would
    # only ever connect to what evil.test resolves to.
    code = ("import socket, ssl, sys\n"
            "ctx = ssl.create_default_context(cafile=sys.argv[2])\n"
            "ctx.check_hostname = False\n"
            "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10)\n"
            "try:\n"
            "    t = ctx.wrap_socket(s, server_hostname='evil.test')\n"
            "    t.sendall(b'GET /ok/a HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n"
            "    print('reached', t.recv(100))\n"
            "except (ssl.SSLError, OSError) as e:\n"
            "    print('refused', type(e).__name__)\n")
    r = run(pki, "--http-port", str(tls.port), "--http-allow", "* localhost/*", "--",
            PY, "-c", code, str(tls.port), pki["ca"])
    assert r.stdout.startswith("refused"), (r.stdout, r.stderr)
    assert tls.paths() == []
    # Control: outside, the same client reaches the server.
    out = subprocess.run([PY, "-c", code, str(tls.port), pki["ca"]], capture_output=True,
                         text=True, timeout=30)
    assert out.stdout.startswith("reached"), out


# ------------------------------------------------------------------ termination

def test_inject_ca_terminates_tls_and_judges_method_and_path(pki, tls, tmpdir_path):
    p = tls.port
    before = open(pki["bundle"], "rb").read()
    ca_out = os.path.join(tmpdir_path, "run-ca.pem")
    log = os.path.join(tmpdir_path, "log.jsonl")
    sh = curl_all("https://localhost:%d/ok/a" % p, "https://localhost:%d/no/b" % p,
                  cacert=pki["bundle"])
    sh += "; " + curl_all("https://localhost:%d/ok/c" % p, cacert=pki["bundle"],
                          extra=["-H", "'Host: other.test'"])
    r = run(pki, "--http-port", str(p), "--http-inject-ca", pki["bundle"], "--http-ca-out", ca_out,
            "--http-allow", "GET localhost/ok/*", "--http-log", log, "--", "/bin/sh", "-c", sh,
            env={"SSL_CERT_FILE": pki["ca"]})
    out = r.stdout
    assert "path=/ok/a\n rc=0" in out, (out, r.stderr)
    assert "GET localhost/no/b refused: no http_allow rule matches it" in out
    assert "differs from the TLS server name" in out
    assert tls.paths() == ["/ok/a"]
    # The real bundle is untouched; the CA exported has no key.
    assert open(pki["bundle"], "rb").read() == before
    pem = open(ca_out).read()
    assert "BEGIN CERTIFICATE" in pem and "PRIVATE KEY" not in pem
    assert pem.encode() not in before
    recs = [json.loads(l) for l in open(log)]
    assert [x["scheme"] for x in recs] == ["https"] * 3
    assert [x["status"] for x in recs] == [200, 403, 421]


def test_own_ca_and_python_ssl_in_the_guest(pki, tls):
    code = ("import urllib.request, urllib.error, ssl, sys\n"
            "ctx = ssl.create_default_context(cafile=sys.argv[2])\n"
            "for path in ('/ok/1', '/admin/2'):\n"
            "    try:\n"
            "        print(urllib.request.urlopen('https://localhost:%s%s' % (sys.argv[1], path),"
            " context=ctx, timeout=10).status)\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print(e.code)\n")
    os.environ["SSL_CERT_FILE"] = pki["ca"]  # the proxy trusts the test server
    try:
        sb = sandlock.Sandbox(fs_readable=SYSTEM + [pki["dir"]], timeout=60,
                              http_ports=[tls.port], http_ca=pki["ca"], http_key=pki["cakey"],
                              http_allow=["GET localhost/*"], http_deny=["* */admin/*"])
        r = sb.run([PY, "-c", code, str(tls.port), pki["ca"]])
    finally:
        del os.environ["SSL_CERT_FILE"]
    assert r.stdout.decode().split() == ["200", "403"], r.stderr
    assert tls.paths() == ["/ok/1"]


def test_the_proxy_verifies_the_upstream_certificate(pki, tls):
    # Without SSL_CERT_FILE the proxy does not trust the test server: 502,
    # never a silently unverified connection.
    sh = curl_all("https://localhost:%d/ok/a" % tls.port, cacert=pki["bundle"])
    r = run(pki, "--http-port", str(tls.port), "--http-inject-ca", pki["bundle"],
            "--http-allow", "GET localhost/*", "--", "/bin/sh", "-c", sh,
            env={"SSL_CERT_FILE": "/dev/null"})
    assert "TLS to 'localhost' failed" in r.stdout, (r.stdout, r.stderr)
    assert tls.paths() == []


def test_ca_options_need_rules_and_each_other(pki):
    r = run(pki, "--http-ca", pki["ca"], "--http-allow", "GET x/*", "--", "/bin/true")
    assert r.returncode == 125 and "http_ca is set without http_key" in r.stderr
    r = run(pki, "--http-inject-ca", pki["bundle"], "--", "/bin/true")
    assert r.returncode == 125 and "needs at least one http_allow" in r.stderr
    r = run(pki, "--http-ca", pki["ca"], "--http-key", pki["key"], "--http-allow", "GET localhost/*",
            "--", "/bin/true")
    assert r.returncode == 125 and "is not the key of http_ca" in r.stderr


# ------------------------------------------------------------------ credentials

def test_credentials_reach_only_the_requests_a_rule_names(pki, origin, tmpdir_path):
    p = origin.port
    keyfile = os.path.join(tmpdir_path, "key")
    with open(keyfile, "w") as f:
        f.write("file-s3cret\n")
    sh = ("env; cat /proc/self/environ | tr '\\0' '\\n'; "
          "for u in /api/1 /other/2; do %s -s -o /dev/null http://localhost:%d$u; done; "
          "%s -s -o /dev/null -H 'Authorization: Bearer guest' http://localhost:%d/api/3; "
          "%s -s -o /dev/null -H 'X-Key: mine' http://localhost:%d/keep/4; "
          "%s -s -o /dev/null 'http://localhost:%d/q/5?a=1&key=guest'" % (CURL, p, CURL, p, CURL, p, CURL, p))
    r = run(pki, "--http-port", str(p), "--http-allow", "* localhost/*",
            "--credential", "tok=env:SL_TEST_TOKEN", "--credential", "k=file:" + keyfile,
            "--http-auth", "GET localhost/api/* bearer tok",
            "--http-auth", "GET localhost/keep/* header:x-key k add-only",
            "--http-auth", "GET localhost/q/* query:key k",
            "--", "/bin/sh", "-c", sh, env={"SL_TEST_TOKEN": "env-s3cret"})
    assert r.returncode == 0, r.stderr
    # Never visible inside: not in env, /proc/self/environ or any output.
    assert "s3cret" not in r.stdout and "SL_TEST_TOKEN" not in r.stdout
    seen = {path: h for _, path, h in origin.seen}
    assert seen["/api/1"]["Authorization"] == "Bearer env-s3cret"
    assert "Authorization" not in seen["/other/2"]
    assert seen["/api/3"]["Authorization"] == "Bearer env-s3cret"  # replace
    assert seen["/keep/4"]["X-Key"] == "mine"                      # add-only keeps the guest's
    assert "/q/5?a=1&key=file-s3cret" in seen
    assert "cleartext HTTP" in r.stderr  # warned once
    assert r.stderr.count("cleartext HTTP") == 1


def test_credential_errors_name_the_credential_not_its_value(pki):
    r = run(pki, "--http-allow", "* x/*", "--credential", "a=env:SL_NOT_SET_EVER", "--",
            "/bin/true")
    assert r.returncode == 125 and "credential 'a'" in r.stderr
    r = run(pki, "--http-allow", "* x/*", "--http-auth", "* x/* bearer nope", "--", "/bin/true")
    assert r.returncode == 125 and "no credential named 'nope'" in r.stderr
    r = run(pki, "--http-allow", "* x/*", "--credential", "a=env:HOME",
            "--http-auth", "* x/* basic:us:er a", "--", "/bin/true")
    assert r.returncode == 125 and "may not contain ':'" in r.stderr


def test_a_server_echoing_the_request_does_not_hand_the_secret_back(pki, origin, tls):
    # /headers echoes every request header in its body: the guest gets the
    # response with the injected credential masked, the server saw it.
    p = origin.port
    sh = ("%s -s http://localhost:%d/headers/a; "
          "%s -s -u me:pw http://localhost:%d/headers/b" % (CURL, p, CURL, p))
    r = run(pki, "--http-port", str(p), "--http-allow", "GET localhost/*",
            "--credential", "tok=env:SL_TEST_TOKEN", "--credential", "pw=env:SL_TEST_PW",
            "--http-auth", "GET localhost/headers/a bearer tok",
            "--http-auth", "GET localhost/headers/b basic:deploy pw",
            "--", "/bin/sh", "-c", sh,
            env={"SL_TEST_TOKEN": "echo-s3cret-token", "SL_TEST_PW": "echo-s3cret-pw"})
    seen = {path: h for _, path, h in origin.seen}
    assert seen["/headers/a"]["Authorization"] == "Bearer echo-s3cret-token"
    assert seen["/headers/b"]["Authorization"].startswith("Basic ")  # replaced the guest's
    assert "Authorization: Bearer xxxxxxxxxxxxxxxxx" in r.stdout, r.stdout
    assert "s3cret" not in r.stdout
    import base64
    enc = base64.b64encode(b"deploy:echo-s3cret-pw").decode()
    assert seen["/headers/b"]["Authorization"] == "Basic " + enc
    assert enc not in r.stdout and "Authorization: Basic " + "x" * len(enc) in r.stdout
    # Over TLS too (terminated): the secret goes encrypted to the server, and
    # is masked on the way back.
    sh = "%s -s --cacert %s https://localhost:%d/headers/c" % (CURL, pki["bundle"], tls.port)
    r = run(pki, "--http-port", str(tls.port), "--http-inject-ca", pki["bundle"],
            "--http-allow", "GET localhost/*", "--credential", "tok=env:SL_TEST_TOKEN",
            "--http-auth", "GET localhost/headers/* bearer tok", "--", "/bin/sh", "-c", sh,
            env={"SL_TEST_TOKEN": "echo-s3cret-token", "SSL_CERT_FILE": pki["ca"]})
    assert "Authorization: Bearer xxxxxxxxxxxxxxxxx" in r.stdout and "s3cret" not in r.stdout, r.stdout
    assert "cleartext" not in r.stderr  # TLS: no warning
