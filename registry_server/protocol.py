"""uvicorn's HTTP protocol with one socket write per response instead of one per ASGI message, and a
deadline for each request's head.

uvicorn writes the status line + headers and the body separately; on loopback each write is a
syscall that also runs the receiver's TCP path, so small responses pay it twice. The transport is
wrapped so writes made in one event-loop step are joined and sent together on the next step.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol


class _CoalescingTransport:
    """Delegates to a real transport; `write` buffers until the loop's next step (or `close`)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type,unused-ignore]
    """uvicorn's default HTTP protocol (httptools if installed, else h11) with coalesced writes, and a
    deadline for each request's head.

    uvicorn closes a keep-alive connection left idle, but waits forever for a request line and headers
    that trickle in (or never come on a fresh connection): a client could hold connections, and the
    server's file descriptors, with a few bytes each. Here a head not complete `head_timeout` seconds
    after the connection opened, or after its first byte on a kept-alive connection, closes it. (The
    body has its own bounds: `registry_server.limits`.)
    """

    head_timeout = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override,unused-ignore]
        loop = getattr(self, "loop", None) or asyncio.get_running_loop()
        super().connection_made(_CoalescingTransport(transport, loop))  # type: ignore[arg-type,unused-ignore]
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_cycle: object = None
        self._arm_head_timer(loop)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_head() and (self._head_timer is None or self._head_cycle is not self._cycle()):
            self._arm_head_timer(asyncio.get_running_loop())

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _cycle(self) -> object:
        return getattr(self, "cycle", None)

    def _waiting_for_head(self) -> bool:
        cycle = self._cycle()
        return cycle is None or bool(getattr(cycle, "response_complete", False))

    def _arm_head_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_cycle = self._cycle()
        self._head_timer = loop.call_later(self.head_timeout, self._head_expired)

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._head_cycle is self._cycle() and self._waiting_for_head():  # no request began since
            transport = getattr(self, "transport", None)
            if transport is not None and not transport.is_closing():
                transport.close()
