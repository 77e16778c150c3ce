"""In-process caches of the hot read paths: per-package version lists (with the rendered
`versions` body and its ETag) and small immutable blobs."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from registry_server.render import version_ext
from registry_server.storage.base import Storage, VersionRecord
from strawpot.model.kinds import Kind

MAX_PACKAGES = 10_000
MAX_VERSIONS_BYTES = 64 * 1024 * 1024  # the rendered bodies (and, about as large, the records behind them)


@dataclass(frozen=True)
class PackageVersions:
    """Every version of one package, lowest first, and the `versions` body rendered once."""

    records: tuple[VersionRecord, ...]
    by_version: dict[str, VersionRecord]
    latest: VersionRecord | None
    body: bytes
    etag: str

    def weight(self) -> int:
        """Roughly the bytes it holds: the body, and the records it was rendered from (about as many)."""
        return 2 * len(self.body) + 512


def latest_of(records: tuple[VersionRecord, ...]) -> VersionRecord | None:
    """The highest non-yanked release, else the highest non-yanked pre-release (records sorted)."""
    from resolver import Version

    live = [r for r in records if not r.yanked]
    stable = [r for r in live if not Version.parse(r.version).prerelease]
    pool = stable or live
    return pool[-1] if pool else None


def build_entry(kind: Kind, slug: str, records: list[VersionRecord]) -> PackageVersions:
    from resolver import Version

    ordered = tuple(sorted(records, key=lambda r: Version.parse(r.version)))
    payload = {"kind": kind.value, "slug": slug, "versions": [version_ext(r) for r in ordered]}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    return PackageVersions(ordered, {r.version: r for r in ordered}, latest_of(ordered), body, etag)


class VersionsCache:
    """(kind, slug) → PackageVersions, oldest out first past `max_bytes` (or `MAX_PACKAGES` packages); a publish,
    yank or delete invalidates its package.

    A generation counter per key (and an epoch for `clear`) keeps a slow load that raced an invalidation
    from storing stale data. The cache is per process; `Registry.sync` clears it when another process
    changed the registry.
    """

    def __init__(self, storage: Storage, max_bytes: int = MAX_VERSIONS_BYTES) -> None:
        self.storage, self.max_bytes = storage, max_bytes
        self.size = 0
        self._entries: dict[tuple[Kind, str], PackageVersions] = {}
        self._generation: dict[tuple[Kind, str], int] = {}
        self._epoch = 0
        self._lock = threading.Lock()

    def peek(self, kind: Kind, slug: str) -> PackageVersions | None:
        return self._entries.get((kind, slug))

    def load(self, kind: Kind, slug: str) -> PackageVersions | None:
        """Blocking: read storage (on a miss) and remember the result; None for an unknown package."""
        key = (kind, slug)
        entry = self._entries.get(key)
        if entry is not None:
            return entry
        generation, epoch = self._generation.get(key, 0), self._epoch
        records = self.storage.versions(kind, slug)
        if records is None:
            return None
        entry = build_entry(kind, slug, records)
        with self._lock:
            if self._generation.get(key, 0) == generation and self._epoch == epoch and key not in self._entries \
                    and entry.weight() <= self.max_bytes:
                self._entries[key] = entry
                self.size += entry.weight()
                while self.size > self.max_bytes or len(self._entries) > MAX_PACKAGES:  # the oldest out first
                    self.size -= self._entries.pop(next(iter(self._entries))).weight()
        return entry

    def invalidate(self, kind: Kind, slug: str) -> None:
        key = (kind, slug)
        with self._lock:
            self._generation[key] = self._generation.get(key, 0) + 1
            gone = self._entries.pop(key, None)
            self.size -= gone.weight() if gone is not None else 0

    def clear(self) -> None:
        with self._lock:
            self._epoch += 1
            self._entries.clear()
            self.size = 0


class BlobCache:
    """Small immutable blobs (content-addressed, so never stale) with their content type, LRU by bytes."""

    def __init__(self, storage: Storage, max_bytes: int = 64 * 1024 * 1024, max_item: int = 1024 * 1024) -> None:
        self.storage = storage
        self.max_bytes, self.max_item = max_bytes, max_item
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._types: dict[str, str] = {}
        self._lock = threading.Lock()

    def peek(self, sha256: str) -> bytes | None:
        data = self._items.get(sha256)
        if data is not None:
            with self._lock:
                if sha256 in self._items:
                    self._items.move_to_end(sha256)
        return data

    def load(self, sha256: str) -> bytes | None:
        data = self.peek(sha256)
        if data is not None:
            return data
        data = self.storage.get_blob(sha256)
        if data is not None and len(data) <= self.max_item:
            with self._lock:
                if sha256 not in self._items:
                    self._items[sha256] = data
                    self._size += len(data)
                while self._size > self.max_bytes:
                    _, old = self._items.popitem(last=False)
                    self._size -= len(old)
        return data

    def content_type(self, sha256: str, data: bytes) -> str:
        """Text (UTF-8) files as text with a charset, anything else as bytes; remembered per blob."""
        known = self._types.get(sha256)
        if known is None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                known = "application/octet-stream"
            else:
                known = "text/plain; charset=utf-8"
            if len(self._types) >= 10_000:  # ~2 MB at most; re-deciding a type costs one decode of a small blob
                self._types.clear()
            self._types[sha256] = known
        return known
