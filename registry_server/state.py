"""What every handler shares: the storage and the in-process caches in front of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from starlette.requests import Request

from registry_server.cache import BlobCache, VersionsCache
from registry_server.downloads import DownloadTally
from registry_server.errors import ApiError
from registry_server.storage.base import Storage
from strawpot.model.kinds import Kind

KINDS = {kind.plural: kind for kind in Kind}


MAX_CONCURRENT_PUBLISHES = 8
MAX_PUBLISHES_PER_USER = 2  # one user's uploads wait for each other, not for everybody's slots
PUBLISH_SLOT_WAIT = 30.0


@dataclass
class Registry:
    storage: Storage
    versions: VersionsCache = field(init=False)
    blobs: BlobCache = field(init=False)
    downloads: DownloadTally = field(init=False)
    slot_wait: float = PUBLISH_SLOT_WAIT
    _publish_slots: anyio.Semaphore | None = field(init=False, default=None)
    _user_slots: dict[int, tuple[anyio.Semaphore, int]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.versions = VersionsCache(self.storage)
        self.blobs = BlobCache(self.storage)
        self.downloads = DownloadTally(self.storage)

    @asynccontextmanager
    async def publish_slot(self, user_id: int) -> AsyncIterator[None]:
        """Hold one of the few upload slots (uploads of ≤ 52 MB sit in memory) while reading a publish.

        A user holds at most `MAX_PUBLISHES_PER_USER` of them; a request waits for a slot at most
        `slot_wait` seconds (then 503 with Retry-After). A slow upload keeps its slot only until the
        body's deadline or minimum rate ends it (`registry_server.limits`).
        """
        if self._publish_slots is None:  # created on first use, inside the event loop
            self._publish_slots = anyio.Semaphore(MAX_CONCURRENT_PUBLISHES)
        mine, users = self._user_slots.get(user_id) or (anyio.Semaphore(MAX_PUBLISHES_PER_USER), 0)
        self._user_slots[user_id] = (mine, users + 1)
        held: list[anyio.Semaphore] = []
        try:
            with anyio.move_on_after(self.slot_wait):
                for semaphore in (mine, self._publish_slots):
                    await semaphore.acquire()
                    held.append(semaphore)
            if len(held) < 2:
                raise ApiError(503, f"no upload slot came free within {self.slot_wait:g} s; retry later",
                               {"Retry-After": "10"})
            yield
        finally:
            for semaphore in held:
                semaphore.release()
            mine, users = self._user_slots[user_id]
            if users == 1:
                del self._user_slots[user_id]
            else:
                self._user_slots[user_id] = (mine, users - 1)

    def close(self) -> None:
        """Write what is still only in memory (download counts); the storage stays open."""
        self.downloads.close()

    def changed(self, kind: Kind, slug: str) -> None:
        """A publish, yank or delete happened: forget what the caches hold for the package."""
        self.versions.invalidate(kind, slug)


def registry(request: Request) -> Registry:
    reg: Registry = request.app.state.registry
    return reg


def path_kind(request: Request) -> Kind:
    """The kind named by the `{kinds}` path segment (plural), or a 404."""
    plural = request.path_params["kinds"]
    kind = KINDS.get(plural)
    if kind is None:
        raise ApiError(404, f"unknown package kind {plural!r} (expected one of: {', '.join(KINDS)})")
    return kind


def body_kind(value: object) -> Kind:
    """A kind named in a JSON body (singular or plural), or a 400."""
    if not isinstance(value, str):
        raise ApiError(400, "'kind' must be one of: " + ", ".join(k.value for k in Kind))
    try:
        return Kind.parse(value)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
