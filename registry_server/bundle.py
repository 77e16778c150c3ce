"""`POST /archives`: many versions' archives in one answer (one round trip instead of one per package).

The body is `{"items": [{"kind", "slug", "version"}, ...]}` (at most `MAX_ITEMS`). The answer is one line
of JSON, the index `[{"kind", "slug", "version", "sha256", "size"}, ...]` of the archives that follow,
then their bytes back to back in that order. Unknown items are left out of the index, and so is
everything past `MAX_BUNDLE_BYTES`; the client fetches what is missing one archive at a time. Each
archive sent counts one download, as `GET .../archive` does.

The answer is streamed from storage to the socket a chunk (`blobs.CHUNK`) at a time, never held whole
(small archives are read a run of up to a chunk's bytes together),
and its bytes are reserved from `ARCHIVES_BUDGET`, the bytes all `/archives` answers of the process may
have promised and not yet sent: past it the request is a 503 with Retry-After (no token is needed here,
so this is what keeps a crowd of them from tying the server up).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from registry_server.errors import ApiError
from registry_server.requests import json_body
from registry_server.state import Registry, body_kind, registry
from registry_server.storage.base import VersionRecord
from registry_server.storage.blobs import CHUNK
from strawpot.model.kinds import Kind
from strawpot.model.package import slug_error

MAX_ITEMS = 200
MAX_BUNDLE_BYTES = 64 * 1024 * 1024  # archive bytes in one answer
@dataclass(frozen=True)
class Planned:
    kind: Kind
    slug: str
    record: VersionRecord

    def index(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "slug": self.slug, "version": self.record.version,
                "sha256": self.record.archive_sha256, "size": self.record.archive_size}


def _items(raw: object) -> list[tuple[Kind, str, str]]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_ITEMS:
        raise ApiError(400, f"'items' must be a list of 1 to {MAX_ITEMS} objects {{\"kind\", \"slug\", \"version\"}}")
    items = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("slug"), str) or not isinstance(item.get("version"), str):
            raise ApiError(400, "each of 'items' must be an object {\"kind\", \"slug\", \"version\"} of strings")
        if (problem := slug_error(item["slug"])) is not None:
            raise ApiError(400, f"items: {problem}")
        items.append((body_kind(item.get("kind")), item["slug"], item["version"]))
    return items


def plan(reg: Registry, items: list[tuple[Kind, str, str]], cap: int = MAX_BUNDLE_BYTES) -> list[Planned]:
    """Blocking: the archives the answer will hold, in order, at most `cap` bytes (metadata reads only)."""
    chosen: list[Planned] = []
    total = 0
    for kind, slug, version in dict.fromkeys(items):
        entry = reg.versions.load(kind, slug)
        record = entry.by_version.get(version) if entry else None
        if record is None or total + record.archive_size > cap:
            continue
        if not reg.storage.remote_blobs and reg.storage.open_blob(record.archive_sha256) is None:
            continue  # a local store that lost the file: left out (a remote one is not asked twice)
        total += record.archive_size
        chosen.append(Planned(kind, slug, record))
    return chosen


class ArchiveMissing(Exception):
    """An archive the index announced could not be read: the answer is cut, and the client sees it is short."""


def _archive_chunks(reg: Registry, sha256: str) -> Iterator[bytes]:
    """Blocking: one archive's bytes, a chunk at a time."""
    chunks = reg.storage.open_blob(sha256)
    if chunks is None:
        raise ArchiveMissing(f"archive {sha256} vanished from the store while it was being sent")
    yield from chunks


def _read_whole(reg: Registry, group: list[Planned]) -> bytes:
    """Blocking: the bytes of a run of small archives, back to back (one trip to the thread pool for them all)."""
    return b"".join(chunk for item in group for chunk in _archive_chunks(reg, item.record.archive_sha256))


def _groups(chosen: list[Planned]) -> Iterator[list[Planned]]:
    """`chosen` in order, cut into runs of at most `CHUNK` archive bytes; an archive larger than that is a run
    of its own (and is streamed a chunk at a time)."""
    group: list[Planned] = []
    size = 0
    for item in chosen:
        if group and size + item.record.archive_size > CHUNK:
            yield group
            group, size = [], 0
        group.append(item)
        size += item.record.archive_size
    if group:
        yield group


async def _stream(reg: Registry, chosen: list[Planned], head: bytes, reserved: int) -> AsyncGenerator[bytes, None]:
    """The head, then the archives. Small ones are read a run of up to `CHUNK` bytes at a time, in one trip to the
    thread pool: a bundle is mostly archives of a few KiB, and a trip per archive cost more than reading it."""
    try:
        yield head
        for group in _groups(chosen):
            if len(group) == 1 and group[0].record.archive_size > CHUNK:
                async for chunk in iterate_in_threadpool(_archive_chunks(reg, group[0].record.archive_sha256)):
                    yield chunk
            else:
                yield await run_in_threadpool(_read_whole, reg, group)
            for item in group:
                reg.archives_in_flight.give(item.record.archive_size)
                reserved -= item.record.archive_size
                reg.downloads.add(item.kind, item.slug)
    finally:  # also when the client went away mid-answer
        reg.archives_in_flight.give(reserved)


class _Closing(StreamingResponse):
    """A streamed answer whose generator is closed as soon as the answer ends, sent or cut (a client that went
    away), so what it reserved from the budget comes back at once, not whenever it is garbage collected."""

    body_iterator: AsyncGenerator[bytes, None]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.body_iterator.aclose()


async def archives(request: Request) -> StreamingResponse:
    items = _items((await json_body(request)).get("items"))
    reg = registry(request)
    chosen = await run_in_threadpool(plan, reg, items)
    total = sum(item.record.archive_size for item in chosen)
    reg.archives_in_flight.take(total)
    head = json.dumps([item.index() for item in chosen], separators=(",", ":")).encode() + b"\n"
    return _Closing(
        _stream(reg, chosen, head, total), media_type="application/octet-stream",
        headers={"Cache-Control": "no-store", "Content-Length": str(len(head) + total)},
    )
