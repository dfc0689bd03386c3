"""An HTTP receiver for notify.webhook: each POST's body as one line of FILE, answered 200; or,
with --silent, every connection accepted and its request read, and never an answer.

usage: webhook_receiver.py HOST PORT FILE [--silent]"""
import http.server
import socket
import sys

host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]

if "--silent" in sys.argv:
    server = socket.create_server((host, port))
    held = []
    while True:
        conn, _ = server.accept()
        conn.recv(65536)
        open(out, "a").write("request held\n")
        held.append(conn)  # never answered, never closed

class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(out, "ab") as f:
            f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass

http.server.ThreadingHTTPServer((host, port), Hook).serve_forever()
