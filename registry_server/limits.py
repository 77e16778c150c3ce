"""Every request bounded before it is read: its head's size, and its body's declared size, streamed size,
deadline and minimum rate.

`RequestLimits` wraps the ASGI app. A request head (request line and headers) over `MAX_REQUEST_HEAD`
is a 431 (h11 refuses one that large while it is still arriving; this catches one that came in a
single read). A declared `Content-Length` over the route's limit is answered 413
before one byte of the body is read; a body without one (chunked) is counted as it streams and cut
at the same limit. Reading the body runs against a clock of the time spent waiting for the client:
every window of a few seconds must bring a minimum of bytes, and all of it must have arrived by
`deadline`, or the request ends with 408. So a slow client holds a publish slot (or a connection)
for a bounded time only. The limits are arguments (`BodyPolicy`), so tests can tighten them.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import anyio

from registry_server.errors import ApiError
from strawpot.model.kinds import Kind
from strawpot.model.package import MAX_TOTAL_SIZE

MAX_BODY = 64 * 1024
MAX_REQUEST_HEAD = 16 * 1024
# Room for multipart framing and the form fields on top of the 50 MB of file bytes.
MAX_UPLOAD = MAX_TOTAL_SIZE + 2 * 1024 * 1024
_PUBLISH_PATH = re.compile(r"^/api/v1/(" + "|".join(k.plural for k in Kind) + r"|batch)$")

Scope = dict[str, Any]


@dataclass(frozen=True)
class BodyPolicy:
    """The bounds of a request body: bytes, and a rate kept in every `window` of seconds until `deadline`."""

    max_body: int = MAX_BODY
    max_upload: int = MAX_UPLOAD
    window: float = 5.0
    min_rate: float = 16 * 1024
    deadline: float = 300.0

    def limit(self, scope: Scope) -> int:
        """The largest body the route takes: a publish carries files, everything else a small form or JSON."""
        publish = scope["method"] == "POST" and _PUBLISH_PATH.match(scope["path"]) is not None
        return self.max_upload if publish else self.max_body


class RequestLimits:
    """ASGI middleware bounding every HTTP request's head and body (`BodyPolicy`), authenticated or not."""

    def __init__(self, app: Any, policy: BodyPolicy | None = None) -> None:
        self.app = app
        self.policy = policy or BodyPolicy()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = len(scope["path"]) + len(scope["query_string"])
        declared: int | None = None
        chunked = False
        for name, value in scope["headers"]:  # one pass: the head's size, the body's declared length
            head += len(name) + len(value) + 4
            if name == b"content-length":
                declared = int(value) if value.isdigit() and len(value) <= 18 else -1
            elif name == b"transfer-encoding":
                chunked = True
        if head > MAX_REQUEST_HEAD:
            await _answer(send, 431, f"request line and headers of {head} bytes; the limit is {MAX_REQUEST_HEAD}")
            return
        if not chunked and not declared:  # HTTP/1.1: no Content-Length and no Transfer-Encoding means no body
            await self.app(scope, receive, send)
            return
        if declared == -1:
            await _answer(send, 400, "Content-Length is not a non-negative integer")
            return
        limit = self.policy.limit(scope)
        if declared is not None and declared > limit:
            await _answer(send, 413, f"request body of {declared} bytes is larger than the limit of {limit} bytes")
            return
        bounded = _BoundedReceive(receive, limit, self.policy)

        async def send_closing_early(message: dict[str, Any]) -> None:
            # An answer given before the whole body arrived (a 413, a 401, a refused upload) closes the
            # connection, so the server never drains the rest of an unbounded body.
            if message["type"] == "http.response.start" and not bounded.done:
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await self.app(scope, bounded, send_closing_early)


class _BoundedReceive:
    """The app's `receive`, counting body bytes and timing each wait for them.

    Only time spent waiting for the client counts (not a wait for an upload slot, not the app's own
    work between reads). Each `policy.window` seconds of it must bring `policy.min_rate × window`
    bytes, and all of it must stay under `policy.deadline`: a slow start, a stall after a fast burst
    and a steady trickle all end within one window.
    """

    def __init__(self, receive: Any, limit: int, policy: BodyPolicy) -> None:
        self._receive = receive
        self._limit = limit
        self._policy = policy
        self._waited = self._window_waited = 0.0
        self._received = self._window_received = 0
        self.done = False

    async def __call__(self) -> dict[str, Any]:
        if self.done:  # the body is in; what is left is waiting for a disconnect, not bounded here
            message: dict[str, Any] = await self._receive()
            return message
        policy = self._policy
        allowed = min(policy.window - self._window_waited, policy.deadline - self._waited)
        started = time.monotonic()
        try:
            if allowed <= 0:
                raise TimeoutError
            with anyio.fail_after(allowed):
                message = await self._receive()
        except TimeoutError:
            self._waited += time.monotonic() - started
            raise self._too_slow() from None
        spent = time.monotonic() - started
        self._waited += spent
        self._window_waited += spent
        if message["type"] == "http.request":
            size = len(message.get("body", b""))
            self._received += size
            if self._received > self._limit:
                raise ApiError(413, f"request body larger than the limit of {self._limit} bytes")
            self._window_received += size
            if self._window_received >= policy.min_rate * policy.window:
                self._window_waited, self._window_received = 0.0, 0
            self.done = not message.get("more_body", False)
        return message

    def _too_slow(self) -> ApiError:
        policy = self._policy
        return ApiError(
            408,
            f"request body too slow: {self._received} bytes in {self._waited:.1f} s (the body must bring "
            f"{policy.min_rate * policy.window:g} bytes every {policy.window:g} s, and all of it within "
            f"{policy.deadline:g} s)",
        )


async def _answer(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ],
    })
    await send({"type": "http.response.body", "body": body})
