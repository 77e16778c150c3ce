"""Read-after-write across processes: before each request, compare the storage's change counter with the one
this process last saw and drop every cache when another worker (or host) published, yanked or deleted.

It also turns a storage that cannot be reached (`StorageUnavailable`, raised anywhere below) into a `503`
with `Retry-After`, so a restarted database costs failed requests, never a restarted registry.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.concurrency import run_in_threadpool

from registry_server.errors import error_response
from registry_server.state import Registry
from registry_server.storage.base import StorageUnavailable

log = logging.getLogger("registry_server")
RETRY_AFTER = "2"


class FreshReads:
    """ASGI middleware; it needs `scope["app"].state.registry`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        reg: Registry = scope["app"].state.registry
        try:
            if reg.storage.remote:  # a round trip (or a wait for a server that is down): off the event loop
                await run_in_threadpool(reg.sync)
            else:  # one single-row read in SQLite: microseconds, cheaper than the thread hop
                reg.sync()
            await self.app(scope, receive, send_tracked)
        except StorageUnavailable as exc:
            if started:
                raise
            log.warning("%s %s: %s", scope["method"], scope["path"], exc)
            answer = error_response(503, "the registry's storage is unavailable for a moment; retry shortly",
                                    {"Retry-After": RETRY_AFTER})
            await answer(scope, receive, send)
