"""Small hostile or recording HTTP servers on a free loopback port, for client hardening tests.

    with trickling_server(interval=0.3) as url:      # answers 200, then one body byte per `interval` s
    with silent_server() as url:                     # accepts connections and never answers
    with silent_server(held=held) as url:            # held: how long each client waited before it hung up
    with scripted_server({"/api/v1/skills/x/versions": (200, b"...")}) as url:
    with recording_proxy(upstream_url) as proxy:      # proxy.url; proxy.seen: [(method, path, authorization)]
    with tls_relay(upstream_url) as url:              # https:// in front of an http:// server (TLS_CERT)

The first three take `tls=True` to speak TLS with TLS_CERT (fixtures/tls/), which clients trust as their CA.

Each server runs on daemon threads and is shut down (sockets closed) when the block exits. Stdlib only.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

# a self-signed certificate for 127.0.0.1 and localhost (test use only): the servers' and the clients' CA
TLS_CERT = Path(__file__).resolve().parents[1] / "fixtures" / "tls" / "loopback.pem"
TLS_KEY = TLS_CERT.with_suffix(".key")

Handler = Callable[[socket.socket, threading.Event], None]


def _tls(handle: Handler) -> Handler:
    """`handle` behind a TLS handshake with TLS_CERT."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_CERT, TLS_KEY)

    def secured(conn: socket.socket, stop: threading.Event) -> None:
        try:
            conn.settimeout(5)
            tls = context.wrap_socket(conn, server_side=True)
        except OSError:
            return
        handle(tls, stop)

    return secured


@contextmanager
def _listening(handle: Handler, tls: bool = False) -> Iterator[str]:
    """Accept connections on a loopback port and run `handle(conn, stop)` on a thread for each."""
    if tls:
        handle = _tls(handle)
    stop = threading.Event()
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    conns: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(conn)
            threading.Thread(target=handle, args=(conn, stop), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()
        for conn in conns:
            conn.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    conn.settimeout(5)
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


@contextmanager
def trickling_server(interval: float = 0.3, body_size: int = 10_000, *, tls: bool = False,
                     head_too: bool = False, requests: list[bytes] | None = None) -> Iterator[str]:
    """Every request gets a 200 with a JSON content type and a body of `body_size` bytes, sent one
    byte every `interval` seconds (with `head_too`, the status line and headers as well): each read
    succeeds, the whole answer never arrives in time. Each request's head is appended to `requests`."""

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        try:
            request = _read_request(conn)
            if requests is not None:
                requests.append(request)
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {body_size}\r\n\r\n".encode())
            trickled = [head[i:i + 1] for i in range(len(head))] if head_too else []
            if not head_too:
                conn.sendall(head)
            for byte in [*trickled, *[b" "] * body_size]:
                if stop.wait(interval):
                    return
                conn.sendall(byte)
        except OSError:
            return

    with _listening(handle, tls) as url:
        yield url


@contextmanager
def silent_server(*, tls: bool = False, held: list[list[float]] | None = None) -> Iterator[str]:
    """Accepts every connection, reads the request, and never answers. With `held`, each request appends
    [seconds the client kept waiting for an answer] once the client hangs up (an empty list until then)."""

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        try:
            _read_request(conn)
        except OSError:
            return
        if held is None:
            stop.wait()
            return
        asked = time.monotonic()
        entry: list[float] = []
        held.append(entry)
        conn.settimeout(0.1)
        while not stop.is_set():
            try:
                if conn.recv(1):
                    continue
            except TimeoutError:
                continue
            except OSError:
                pass
            entry.append(time.monotonic() - asked)  # closed by the client
            return

    with _listening(handle, tls) as url:
        yield url


@contextmanager
def scripted_server(routes: dict[str, tuple[int, bytes]], *, tls: bool = False) -> Iterator[str]:
    """Answers each path in `routes` with (status, JSON body); anything else with a JSON 404."""

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                request = _read_request(conn)
                if not request:
                    return
                path = request.split(b" ", 2)[1].decode().split("?")[0]
                status, body = routes.get(path, (404, b'{"error": "not found"}'))
                conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        except OSError:
            return

    with _listening(handle, tls) as url:
        yield url


@contextmanager
def tls_relay(upstream: str) -> Iterator[str]:
    """An https:// URL whose connections are relayed, bytes as they come, to the http:// server `upstream`."""
    target = urlsplit(upstream)

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            if isinstance(sink, ssl.SSLSocket):
                sink.close()  # the server is done: so is the client's connection
            else:
                sink.shutdown(socket.SHUT_WR)  # the client is done sending: the server sees the end

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        conn.settimeout(None)
        try:
            back = socket.create_connection((target.hostname or "127.0.0.1", target.port or 80))
        except OSError:
            conn.close()
            return
        threading.Thread(target=pipe, args=(back, conn), daemon=True).start()
        pipe(conn, back)

    with _listening(handle, tls=True) as url:
        yield url


@dataclass
class RecordingProxy:
    url: str
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)


@contextmanager
def recording_proxy(upstream: str) -> Iterator[RecordingProxy]:
    """A forwarding proxy in front of `upstream` that records each request's Authorization header."""
    target = urlsplit(upstream)
    proxy = RecordingProxy(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            proxy.seen.append((self.command, self.path, self.headers.get("Authorization")))
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            upstream_conn.request(self.command, self.path, body=body, headers=headers)
            answer = upstream_conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            upstream_conn.close()

        do_GET = do_POST = do_HEAD = _forward  # noqa: N815 - http.server's naming

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def elapsed(start: float) -> float:
    return time.monotonic() - start
