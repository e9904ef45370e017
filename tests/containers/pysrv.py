# A Python server for tests/containers/inside.sh: http.server (whose
# HTTPServer sets SO_REUSEADDR before its bind: socketserver's
# allow_reuse_address) answers one GET, then closes and exits.
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
srv.handle_request()
srv.server_close()
