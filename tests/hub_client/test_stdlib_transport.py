"""The http.client transport used for `http://` registries, against a real stdlib HTTP server."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_client import Cache, HubClient, RegistryUnreachable
from hub_client._stdlib import StdlibTransport


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return None  # a client dropping its connection is what some tests do
    seen: list[tuple[str, str, bytes, dict[str, str]]]
    peers: set[int]
    close_after_next: bool


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        return None

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, body, {k.lower(): v for k, v in self.headers.items()}))
        self.server.peers.add(self.client_address[1])
        cut = self.path.endswith("/archive") and [p for _, p, _, _ in self.server.seen].count(self.path) == 1
        if self.path.startswith("/short") or cut:  # promises 1000 bytes, sends 20 and closes the connection
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 20)
            self.close_connection = True
            return
        if self.path.endswith("/archive"):
            data = b"x" * 1000
        elif self.path.startswith("/big"):
            data = b"x" * 300_000
        elif self.path.startswith("/not-modified"):
            self.send_response(304)
            self.end_headers()
            return
        else:
            data = json.dumps({"path": self.path, "body": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.close_after_next:
            self.server.close_after_next = False
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.seen, srv.peers, srv.close_after_next = [], set(), False
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_requests_reuse_one_keep_alive_connection(server: _Server) -> None:
    with httpx.Client(base_url=_url(server), transport=StdlibTransport()) as client:
        for i in range(5):
            assert client.get(f"/a?i={i}").json()["path"] == f"/a?i={i}"
        posted = client.post("/p", json={"x": 1})
        assert posted.json()["body"] == '{"x":1}'
        assert client.get("/not-modified").status_code == 304
        assert client.get("/a").status_code == 200
    assert len(server.peers) == 1
    method, path, body, headers = server.seen[5]
    assert (method, path, headers["content-length"], headers["content-type"]) == ("POST", "/p", "7", "application/json")


def test_a_body_streams_and_a_closed_connection_is_replaced(server: _Server) -> None:
    with httpx.Client(base_url=_url(server), transport=StdlibTransport()) as client:
        with client.stream("GET", "/big") as response:
            assert sum(len(c) for c in response.iter_bytes()) == 300_000
        server.close_after_next = True
        assert client.get("/a").status_code == 200  # the server closes this one after answering
        assert client.get("/b").status_code == 200  # so this goes out on a new connection
        with client.stream("GET", "/big") as response:
            next(response.iter_bytes())  # not read to the end: the connection must not be reused
        assert client.get("/c").json()["path"] == "/c"
    assert len(server.peers) == 3


def test_a_body_cut_short_is_a_transport_error_and_its_connection_is_not_reused(server: _Server) -> None:
    transport = StdlibTransport()
    with httpx.Client(base_url=_url(server), transport=transport) as client:
        assert client.get("/a").status_code == 200
        with pytest.raises(httpx.RemoteProtocolError, match=r"received 20 bytes, expected 1000"):
            client.get("/short")  # on the kept-alive connection of /a
        assert transport._idle.get(("127.0.0.1", server.server_address[1]), []) == []
        assert client.get("/b").json()["path"] == "/b"
    assert len(server.peers) == 2


def test_a_body_cut_short_is_retried_by_hub_client_like_any_read_error(server: _Server, tmp_path: Path, http_wire: Any) -> None:
    with HubClient(_url(server), cache=Cache(tmp_path / "cache"), retries=1, **http_wire.client()) as client, \
            pytest.raises(RegistryUnreachable, match=r"without sending complete message body \(received 20 bytes, expected 1000\)"):
        client._get_json("/short")
    assert [path for _, path, _, _ in server.seen].count("/short") == 2  # a GET: retried


def test_an_archive_cut_short_is_downloaded_again_not_an_integrity_error(server: _Server, tmp_path: Path,
                                                                         http_wire: Any) -> None:
    digest = hashlib.sha256(b"x" * 1000).hexdigest()
    with HubClient(_url(server), cache=Cache(tmp_path / "cache"), **http_wire.client()) as client:
        path = client.fetch_archive("skill", "cut", "1.0.0", digest, 1000)
    assert path.read_bytes() == b"x" * 1000
    assert [p for _, p, _, _ in server.seen] == ["/api/v1/skills/cut/versions/1.0.0/archive"] * 2


def test_a_stale_idle_connection_is_retried_once_on_a_new_one(server: _Server) -> None:
    transport = StdlibTransport()
    with httpx.Client(base_url=_url(server), transport=transport) as client:
        assert client.get("/a").status_code == 200
        (idle,) = next(iter(transport._idle.values()))
        assert idle.sock is not None
        idle.sock.shutdown(socket.SHUT_RDWR)  # as if the server had dropped the idle connection
        assert client.get("/b").json()["path"] == "/b"
        (idle,) = next(iter(transport._idle.values()))
        assert idle.sock is not None
        idle.sock.shutdown(socket.SHUT_RDWR)
        assert client.post("/c", content=b"x").json()["body"] == "x"  # failed while sending: not processed
    assert [path for _, path, _, _ in server.seen] == ["/a", "/b", "/c"]


def test_an_unreachable_registry_is_registry_unreachable(tmp_path: Path, wire: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        client = HubClient(f"{wire.scheme}://127.0.0.1:{port}", cache=Cache(tmp_path), retries=0, **wire.client())
        with client, pytest.raises(RegistryUnreachable):
            client.whoami()


def test_submit_from_inside_the_pool_runs_inline(server: _Server, http_wire: Any) -> None:
    with HubClient(_url(server), max_workers=1, **http_wire.client()) as client:
        def outer() -> int:
            return client.submit(lambda: 41).result() + 1  # would deadlock on a 1-thread pool if queued

        assert client.submit(outer).result(timeout=60) == 42


def test_https_checks_the_certificate_and_the_name_by_default_and_sends_sni() -> None:
    import ssl

    from tests._loopback_servers import TLS_CERT, TLS_KEY

    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_CERT, TLS_KEY)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        body = b'{"results": [], "count": 0}'
        while True:
            try:
                conn, _ = listener.accept()
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            except ssl.SSLError:
                continue  # the client refused our certificate
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    try:
        with HubClient(f"https://localhost:{port}", retries=0) as client, \
                pytest.raises(RegistryUnreachable, match="CERTIFICATE_VERIFY_FAILED"):
            client.search("x")  # a self-signed certificate no CA bundle holds: refused without `verify`
        with HubClient(f"https://localhost:{port}", retries=0, verify=str(TLS_CERT)) as client:
            assert client.search("x") == {"results": [], "count": 0}
        assert names == ["localhost", "localhost"]  # the name goes out as SNI
        made = StdlibTransport()._context()
        assert made.check_hostname and made.verify_mode == ssl.CERT_REQUIRED  # a trusted CA for another name fails
    finally:
        listener.close()
