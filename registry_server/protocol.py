"""uvicorn's HTTP protocol with one socket write per response instead of one per ASGI message.

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
    """uvicorn's default HTTP protocol (httptools if installed, else h11) with coalesced writes."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override,unused-ignore]
        loop = getattr(self, "loop", None) or asyncio.get_running_loop()
        super().connection_made(_CoalescingTransport(transport, loop))  # type: ignore[arg-type,unused-ignore]
