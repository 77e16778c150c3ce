"""Upload slots: how many publish bodies the server holds in memory at once, and for how long one waits.

Every publish takes one of its user's slots (`PER_USER`) before its body is read, so one account's
uploads queue behind each other. A body that grows past `SMALL_UPLOAD` also takes one of the
server's few large slots (`LARGE`): only uploads that are big in memory wait for those, and a crowd
of slow small uploads cannot keep a normal publish out. A wait for either ends after `wait` seconds
with a 503 and Retry-After; a slot is held only while its body streams in, which the request limits
(deadline, minimum rate: `registry_server.limits`) keep bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from registry_server.errors import ApiError

LARGE = 8
PER_USER = 2
SMALL_UPLOAD = 1024 * 1024
WAIT = 30.0


class UploadSlots:
    """Created on first use inside the event loop (anyio primitives need one)."""

    def __init__(self, wait: float = WAIT) -> None:
        self.wait = wait
        self._large = anyio.Semaphore(LARGE)
        self._users: dict[int, tuple[anyio.Semaphore, int]] = {}

    @asynccontextmanager
    async def upload(self, user_id: int) -> AsyncIterator[Slot]:
        """Hold one of `user_id`'s slots while the body is read; the slot's `grow` takes a large one."""
        mine, count = self._users.get(user_id) or (anyio.Semaphore(PER_USER), 0)
        self._users[user_id] = (mine, count + 1)
        slot = Slot(self)
        try:
            await self._acquire(mine, "another upload of yours is still in progress")
            try:
                yield slot
            finally:
                mine.release()
                if slot.large:
                    self._large.release()
        finally:
            mine, count = self._users[user_id]
            if count == 1:
                del self._users[user_id]
            else:
                self._users[user_id] = (mine, count - 1)

    async def take_large(self) -> None:
        await self._acquire(self._large, "the server is receiving other large uploads")

    async def _acquire(self, semaphore: anyio.Semaphore, busy: str) -> None:
        with anyio.move_on_after(self.wait):
            await semaphore.acquire()
            return
        raise ApiError(503, f"{busy} and no upload slot came free within {self.wait:g} s; retry later",
                       {"Retry-After": "10"})


class Slot:
    """One upload's hold; `grow()` once its body passes SMALL_UPLOAD bytes."""

    def __init__(self, slots: UploadSlots) -> None:
        self._slots = slots
        self.large = False

    async def grow(self) -> None:
        if not self.large:
            await self._slots.take_large()
            self.large = True
