"""A reverse proxy on loopback in front of a live registry, for tests and benchmarks. Stdlib only.

    with LoopbackProxy(registry.url, delay=0.05) as proxy:           # 50 ms added to every request
    with LoopbackProxy(registry.url, rewrites={"/api/v1/closure": f}) as proxy:   # f(status, body) -> (status, body)
    with LoopbackProxy(s3_url, hold=h) as proxy:   # h(method, path) blocks to hold a request, raises to drop it
        proxy.url, proxy.count("GET /api/v1/", "/versions")

Every request's method and path are recorded. Each handler thread keeps one keep-alive connection upstream.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# rewrites an answer: (status, body) -> (status, body)
Rewrite = Callable[[int, bytes], tuple[int, bytes]]
# sees a request (method, path) before it is forwarded: returns to let it through, blocks to hold it, raises to drop
# it (the connection closes unanswered)
Hold = Callable[[str, str], None]

_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length", "host"}


class LoopbackProxy:
    """Forwards to `upstream`, sleeping `delay` seconds first, and passes the answers to a request path
    named in `rewrites` through its function before sending them on; `hold` sees each request first."""

    def __init__(self, upstream: str, *, delay: float = 0.0, rewrites: Mapping[str, Rewrite] | None = None,
                 hold: Hold | None = None) -> None:
        target = urlsplit(upstream)
        local = threading.local()
        self.paths: list[str] = []
        proxy = self
        edits = dict(rewrites or {})

        def exchange(method: str, path: str, body: bytes | None, headers: dict[str, str]) -> http.client.HTTPResponse:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                conn.request(method, path, body=body, headers=headers)
                return conn.getresponse()
            except (http.client.HTTPException, OSError):  # the upstream closed an idle connection: once more
                conn.close()
                conn = local.conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                conn.request(method, path, body=body, headers=headers)
                return conn.getresponse()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
                return None

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                proxy.paths.append(f"{self.command} {urlsplit(self.path).path}")
                if delay:
                    time.sleep(delay)
                if hold is not None:
                    hold(self.command, self.path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                response = exchange(self.command, self.path, body, headers)
                status, data = response.status, response.read()
                if (edit := edits.get(self.path)) is not None:
                    status, data = edit(status, data)
                self.send_response(status)
                for key, value in response.getheaders():
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = forward

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024  # a real server's listen backlog, not socketserver's 5 (dropped SYNs cost 1 s)

            def handle_error(self, request: object, client_address: object) -> None:
                return None  # a client closing its keep-alive connection is not news

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, prefix: str, suffix: str = "") -> int:
        """How many recorded requests ("METHOD /path") start with `prefix` and end with `suffix`."""
        return sum(1 for p in self.paths if p.startswith(prefix) and p.endswith(suffix))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LoopbackProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
