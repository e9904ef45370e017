# A Python server: http.server (whose HTTPServer sets SO_REUSEADDR
# before its bind: socketserver's allow_reuse_address) on 127.0.0.1:PORT
# says "serving PORT", answers one GET, closes, says "closed" and exits;
# with --wait, only after a line on stdin.  Used by
# tests/containers/inside.sh and tests/python/test_containers.py.
import http.server
import sys


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"python served"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("serving", srv.server_address[1], flush=True)
srv.handle_request()
srv.server_close()
print("closed", flush=True)
if "--wait" in sys.argv:
    sys.stdin.readline()
