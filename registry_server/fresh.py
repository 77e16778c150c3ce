"""Read-after-write across processes: before each request, compare the storage's change counter with the one
this process last saw and drop every cache when another worker (or host) published, yanked or deleted.

For a remote database the read is shared: a request waits for the first read that *starts after it
arrived* (so it sees every write that completed before it), and all the requests that arrive while one
read is under way share the next one. Under load that is a round trip per batch, not per request.

It also turns a storage that cannot be reached (`StorageUnavailable`, raised anywhere below) into a `503`
with `Retry-After`, so a restarted database costs failed requests, never a restarted registry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool

from registry_server.errors import error_response
from registry_server.state import Registry
from registry_server.storage.base import StorageUnavailable

log = logging.getLogger("registry_server")
RETRY_AFTER = "2"


class SharedCheck:
    """Runs a blocking `check` on a worker thread for every request, coalescing those that overlap."""

    def __init__(self, check: Callable[[], None]) -> None:
        self.check = check
        self._next: asyncio.Future[None] | None = None
        self._running = False

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
            self._next.add_done_callback(_retrieve)
            if not self._running:
                self._running = True
                loop.create_task(self._run())
        await asyncio.shield(self._next)

    async def _run(self) -> None:
        try:
            while self._next is not None:
                batch, self._next = self._next, None  # whoever arrives from now on waits for the next read
                try:
                    await run_in_threadpool(self.check)
                except Exception as exc:
                    batch.set_exception(exc)
                else:
                    batch.set_result(None)
        finally:
            self._running = False


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # seen: no "exception never retrieved" when every waiter went away


class FreshReads:
    """ASGI middleware; it needs `scope["app"].state.registry`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._shared: SharedCheck | None = None

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
                if self._shared is None:
                    self._shared = SharedCheck(reg.sync)
                await self._shared.wait()
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
