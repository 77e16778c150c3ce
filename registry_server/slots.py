"""Upload slots: how many publish bodies the server holds in memory at once, and for how long one waits.

Every publish takes one of its user's slots (`PER_USER`) before its body is read, so one account's
uploads queue behind each other. A body that grows past `SMALL_UPLOAD` also reserves its size (the
declared Content-Length, or the largest upload when none is declared) from a memory budget of
`LARGE_BUDGET` bytes shared by the whole server: only uploads that are big in memory wait for it,
and a crowd of slow uploads cannot keep a normal publish out. A wait for either ends after `wait`
seconds with a 503 and Retry-After; what is held is held only while its body streams in, which the
request limits (a minimum rate per window, a deadline: `registry_server.limits`) keep bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from registry_server.errors import ApiError
from registry_server.limits import MAX_UPLOAD

LARGE_BUDGET = 8 * MAX_UPLOAD
PER_USER = 2
SMALL_UPLOAD = 1024 * 1024
WAIT = 30.0


class UploadSlots:
    """Created on first use inside the event loop (anyio primitives need one)."""

    def __init__(self, wait: float = WAIT, budget: int = LARGE_BUDGET) -> None:
        self.wait = wait
        self.free = budget
        self._freed = anyio.Event()
        self._users: dict[int, tuple[anyio.Semaphore, int]] = {}

    @asynccontextmanager
    async def upload(self, user_id: int, declared: int | None) -> AsyncIterator[Slot]:
        """Hold one of `user_id`'s slots while the body is read; the slot's `grow` reserves its size."""
        mine, count = self._users.get(user_id) or (anyio.Semaphore(PER_USER), 0)
        self._users[user_id] = (mine, count + 1)
        slot = Slot(self, min(declared or MAX_UPLOAD, MAX_UPLOAD))
        try:
            acquired = False
            with anyio.move_on_after(self.wait):
                await mine.acquire()
                acquired = True
            if not acquired:
                raise self._busy("another upload of yours is still being received")
            try:
                yield slot
            finally:
                mine.release()
                self._give(slot.reserved)
        finally:
            mine, count = self._users[user_id]
            if count == 1:
                del self._users[user_id]
            else:
                self._users[user_id] = (mine, count - 1)

    def held(self, user_id: int) -> int:
        """How many of `user_id`'s slots are held right now: a snapshot, safe to read from another thread (tests
        poll it; they never create the slots, which only the event loop does)."""
        mine = self._users.get(user_id)
        return 0 if mine is None else PER_USER - mine[0].value

    async def reserve(self, size: int) -> None:
        with anyio.move_on_after(self.wait):
            while self.free < size:
                await self._freed.wait()
            self.free -= size
            return
        raise self._busy("the server is receiving other large uploads")

    def _give(self, size: int) -> None:
        if size:
            self.free += size
            self._freed.set()
            self._freed = anyio.Event()

    def _busy(self, why: str) -> ApiError:
        return ApiError(503, f"{why} and no upload slot came free within {self.wait:g} s; retry later",
                        {"Retry-After": "10"})


class Slot:
    """One upload's hold; `grow()` once its body passes SMALL_UPLOAD bytes."""

    def __init__(self, slots: UploadSlots, size: int) -> None:
        self._slots = slots
        self.size = size
        self.reserved = 0

    async def grow(self) -> None:
        if not self.reserved:
            await self._slots.reserve(self.size)
            self.reserved = self.size
