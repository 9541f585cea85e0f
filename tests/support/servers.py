#!/usr/bin/env python3
"""Small real servers for the check tests. Each prints "PORT n" once it is
ready, then serves until killed.

  tcp-banner HOST BANNER        accept, send BANNER, echo one read, close
  udp-echo HOST PREFIX          reply PREFIX + datagram
  udp-silent HOST               read datagrams, never reply
  http HOST [--tls CERT KEY [--client-ca CA]]
                                GET /status/N -> status N; /json -> JSON body;
                                /text -> "hello pathosd"; /slow -> 2 s delay;
                                /host -> echoes the Host header
"""
import json
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def ready(port):
    print(f"PORT {port}", flush=True)


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def tcp_banner(host, banner):
    s = socket.socket(family(host), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 0))
    s.listen(16)
    ready(s.getsockname()[1])

    def serve(c):
        with c:
            c.sendall(banner.encode())
            c.settimeout(2)
            try:
                data = c.recv(4096)
                if data:
                    c.sendall(b"echo:" + data)
            except OSError:
                pass

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def udp(host, prefix, reply):
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.bind((host, 0))
    ready(s.getsockname()[1])
    while True:
        data, peer = s.recvfrom(65536)
        if reply:
            s.sendto(prefix.encode() + data, peer)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="text/plain"):
        body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        p = self.path
        if p.startswith("/status/"):
            self.send(int(p.split("/")[2]), f"status {p}")
        elif p == "/json":
            self.send(200, json.dumps({"status": "ok", "ready": True, "count": 3,
                                        "items": [{"name": "a"}]}), "application/json")
        elif p == "/notjson":
            self.send(200, "<html>no</html>")
        elif p == "/text":
            self.send(200, "hello pathosd\nversion 42\n")
        elif p == "/slow":
            time.sleep(2)
            self.send(200, "late")
        elif p == "/host":
            self.send(200, "host=" + str(self.headers.get("Host")))
        elif p == "/headers":
            self.send(200, json.dumps({k.lower(): v for k, v in self.headers.items()}),
                      "application/json")
        elif p == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/text")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send(404, "not found")

    do_HEAD = do_GET

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send(201, "posted")


class Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def http(host, args):
    cls = Server6 if ":" in host else ThreadingHTTPServer
    cls.daemon_threads = True
    srv = cls((host, 0), Handler)
    if args and args[0] == "--tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args[1], args[2])
        if len(args) > 4 and args[3] == "--client-ca":
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(args[4])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    ready(srv.server_address[1])
    srv.serve_forever()


def main():
    mode, host = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    if mode == "tcp-banner":
        tcp_banner(host, rest[0])
    elif mode == "udp-echo":
        udp(host, rest[0], True)
    elif mode == "udp-silent":
        udp(host, "", False)
    elif mode == "http":
        http(host, rest)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
