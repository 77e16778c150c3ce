"""An httpx transport built on the standard library's http.client, for `http://` and `https://` registries.

httpx's default transport goes through httpcore and h11 (pure Python HTTP/1.1 parsing), and importing
httpcore costs more than the whole request does. http.client parses responses in C-accelerated code. Measured
on loopback, a small GET costs about 0.4 ms of client CPU this way against 0.5 ms through httpcore, and a cold
install of 100 packages about 15% less CPU. TLS uses the context httpx would build (`httpx.create_ssl_context`:
the same CA bundle, `SSL_CERT_FILE`/`SSL_CERT_DIR`), made on the first https connection, so a plain-HTTP or
offline client never loads certificates. Both transports pass the same tests
(tests/hub_client/test_transport_parity.py, and the real-socket tests run over each).

Keep-alive connections are pooled (one request at a time on each). A request that fails on a
reused connection before any answer arrived (the server closed an idle connection) is sent again
once on a new connection, as HTTP/1.1 clients do: an idempotent one always, a POST only when it
failed while being sent (an answer lost after it was sent may mean it took effect). Any other
failure is an httpx TransportError, so hub_client's retries and error mapping treat it like httpcore's.

Deadlines: a request may carry `extensions["deadline"]`, a `time.monotonic()` instant. Every blocking
socket operation (connect, send, each recv while reading the status line, headers and body) then waits
at most until that instant, so a server that trickles one byte at a time cannot stretch a request past
it: the per-read timeout alone would let it run forever.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx

__all__ = ["StdlibTransport", "tls_context"]

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
_CHUNK = 64 * 1024


def _timeout(request: httpx.Request, key: str) -> float | None:
    value = request.extensions.get("timeout", {}).get(key)
    return None if value is None else float(value)


def _deadline(request: httpx.Request) -> float | None:
    value = request.extensions.get("deadline")
    return None if value is None else float(value)


def _bounded(timeout: float | None, deadline: float | None) -> float | None:
    """`timeout` shortened to what is left before `deadline`; TimeoutError once it has passed."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request deadline passed")
    return left if timeout is None else min(timeout, left)


class _Deadline(socket.socket):
    """A socket whose every recv and send waits at most the idle timeout and never past `deadline`."""

    idle: float | None = None
    deadline: float | None = None

    def _arm(self) -> None:
        self.settimeout(_bounded(self.idle, self.deadline))

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._arm()
        return super().recv(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self._arm()
        super().sendall(*args, **kwargs)


class _DeadlineTLS(_Deadline, ssl.SSLSocket):
    """The same over TLS: what the transport's SSL context wraps its connections in (`sslsocket_class`)."""


def _connect(address: tuple[str, int], *args: Any) -> socket.socket:
    """`socket.create_connection` with an ASCII host name given as bytes: getaddrinfo encodes a str with the idna codec,
    whose first use imports `encodings.idna` and `stringprep` (more CPU than a request on loopback)."""
    host, port = address
    name = host.encode("ascii") if host.isascii() else host  # getaddrinfo takes bytes too (typeshed says str)
    return socket.create_connection((name, port), *args)  # type: ignore[arg-type]


def _wrap(sock: socket.socket) -> _Deadline:
    return _Deadline(sock.family, sock.type, sock.proto, fileno=sock.detach())


class _Body(httpx.SyncByteStream):
    """The response body; the connection goes back to the pool once the body was read to the end."""

    def __init__(self, transport: StdlibTransport, conn: http.client.HTTPConnection,
                 response: http.client.HTTPResponse) -> None:
        self._transport, self._conn, self._response = transport, conn, response

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        try:
            while chunk := self._response.read(_CHUNK):
                received += len(chunk)
                yield chunk
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        if self._response.length:  # http.client's read(n) ends quietly when the server closes early
            raise httpx.RemoteProtocolError(  # httpcore's words, so that both transports tell it alike
                "peer closed connection without sending complete message body "
                f"(received {received} bytes, expected {received + self._response.length})"
            )

    def close(self) -> None:
        response, self._response = self._response, None  # type: ignore[assignment]
        if response is None:
            return
        if not response.isclosed() and response.length == 0:
            response.read()  # an empty body (304, HEAD) not read yet: nothing to drain, the connection is clean
        if response.isclosed() and not response.will_close and not response.length:
            self._transport._release(self._conn)
        else:  # not read to the end, or the server closes it: never reuse
            response.close()
            self._conn.close()


def tls_context(verify: bool | str) -> ssl.SSLContext:
    """The SSL context httpx would build for `verify` (True: its CA bundle and SSL_CERT_FILE/SSL_CERT_DIR;
    False: no verification), or one trusting the CA bundle at the path `verify`."""
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return httpx.create_ssl_context(verify=verify)


_Key = tuple[str, str, int]  # (scheme, host, port): one pool of idle connections each


class StdlibTransport(httpx.BaseTransport):
    """HTTP/1.1 over pooled http.client connections, TLS for `https://` (`verify`: see `tls_context`)."""

    def __init__(self, max_idle: int = 16, verify: bool | str = True) -> None:
        self._max_idle = max_idle
        self._verify = verify
        self._tls: ssl.SSLContext | None = None
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _context(self) -> ssl.SSLContext:
        with self._lock:
            if self._tls is None:
                self._tls = tls_context(self._verify)
                self._tls.sslsocket_class = _DeadlineTLS
            return self._tls

    def _acquire(self, key: _Key, request: httpx.Request) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop(), True
        scheme, host, port = key
        timeout = _bounded(_timeout(request, "connect"), _deadline(request))
        try:
            conn = (http.client.HTTPSConnection(host, port, timeout=timeout, context=self._context())
                    if scheme == "https" else http.client.HTTPConnection(host, port, timeout=timeout))
            conn._create_connection = _connect  # type: ignore[attr-defined]  # what http.client's connect() calls
            conn.connect()
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "timed out", request=request) from exc
        except OSError as exc:  # ssl.SSLError (a certificate refused) too, as httpcore says it
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        if conn.sock is not None:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not isinstance(conn.sock, _Deadline):
                conn.sock = _wrap(conn.sock)
        return conn, False

    def _release(self, conn: http.client.HTTPConnection) -> None:
        scheme = "https" if isinstance(conn, http.client.HTTPSConnection) else "http"
        with self._lock:
            idle = self._idle.setdefault((scheme, conn.host, conn.port), [])
            if not self._closed and len(idle) < self._max_idle:
                idle.append(conn)
                return
        conn.close()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"StdlibTransport serves http:// and https://, not {url.scheme}://",
                                            request=request)
        key = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        body = request.read()
        target = url.raw_path.decode("ascii")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
            if k.lower() not in (b"content-length", b"transfer-encoding")
        ]
        if body or request.method not in ("GET", "HEAD", "OPTIONS"):
            headers.append(("Content-Length", str(len(body))))
        idempotent = request.method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE")
        for attempt in (0, 1):
            conn, reused = self._acquire(key, request)
            conn.timeout = _timeout(request, "read")
            sent = False
            try:
                if isinstance(conn.sock, _Deadline):
                    conn.sock.idle, conn.sock.deadline = conn.timeout, _deadline(request)
                    conn.sock._arm()
                conn.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
                conn.endheaders(body or None)
                sent = True
                response = conn.getresponse()
            except _STALE as exc:
                conn.close()
                if reused and attempt == 0 and (idempotent or not sent):
                    continue  # the server had closed this idle connection: the request was not processed
                raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
            except TimeoutError as exc:
                conn.close()
                raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
            return httpx.Response(
                response.status,
                headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.getheaders()],
                stream=_Body(self, conn, response),
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason.encode("latin-1")},
                request=request,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()
