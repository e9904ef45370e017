"""Loopback HTTP(S) origin servers for the proxy tests (test_http*.py): every
request that reaches a server is logged, so a test can show that a refused
request never got there."""
import http.server
import os
import socket
import ssl
import subprocess
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a head and body in two writes: no 40 ms ACK wait

    def log_message(self, *a):
        pass

    def _log(self):
        self.server.seen.append((self.command, self.path, dict(self.headers)))

    def _reply(self, body, status=200):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            n = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return n
                left = size
                while left:
                    left -= len(self.rfile.read(min(left, 1 << 20)))
                n += size
                self.rfile.readline()
        left = n = int(self.headers.get("Content-Length", "0"))
        while left:
            got = self.rfile.read(min(left, 1 << 20))
            if not got:
                break
            left -= len(got)
        return n

    def do_GET(self):
        self._log()
        if self.path.startswith("/headers"):
            text = "".join("%s: %s\n" % kv for kv in self.headers.items())
            return self._reply((text + "path=" + self.path + "\n").encode())
        if self.path.startswith("/big/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"x" * (1 << 20)
            while n:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            return None
        return self._reply(("path=%s\n" % self.path).encode())

    do_HEAD = do_GET

    def do_POST(self):
        self._log()
        n = self._body()
        self._reply(("got=%d\n" % n).encode())

    do_PUT = do_POST
    do_DELETE = do_GET


class Origin:
    """A threaded HTTP/1.1 server on 127.0.0.1 (TLS when ctx is given)."""

    def __init__(self, ctx=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.seen = []
        if ctx is not None:
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def seen(self):
        return self.httpd.seen

    def paths(self):
        return [p for _, p, _ in self.httpd.seen]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def make_ca(d, hosts=("localhost",)):
    """A test CA and a server certificate for hosts, made with openssl:
    returns (ca.pem, ca.key, server.pem, server.key) paths in d."""
    ca, cakey = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    crt, key = os.path.join(d, "srv.pem"), os.path.join(d, "srv.key")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", cakey, "-out", ca, "-days", "2", "-subj", "/CN=sandlock test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign")
    csr = os.path.join(d, "srv.csr")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=%s" % hosts[0])
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + h for h in hosts) + "\n")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial",
        "-out", crt, "-days", "2", "-extfile", ext)
    return ca, cakey, crt, key


def tls_origin(crt, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    return Origin(ctx)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
