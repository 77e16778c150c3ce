"""`MirrorStorage`: the registry's own storage first, then what upstream has, cached in tables and blobs of its own.

A name this registry holds (published here, deleted included, or reserved) is never looked up upstream. Any other
name's versions come from upstream, kept for `ttl` seconds; past that they are asked again (a 304 when unchanged),
and when upstream cannot answer, the cached ones are served (the answer says so, `hops.STATUS_HEADER`). Archives
are immutable: fetched on first request, checked against upstream's sha256, kept (up to `cache_max` bytes, least
recently used out first).
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from registry_server.mirror.failures import UpstreamFailed, UpstreamUnavailable
from registry_server.mirror.hops import mark_stale
from registry_server.mirror.tables import CachedPackage, MirrorTables
from registry_server.storage.base import (
    Advisory,
    KeyRecord,
    NewVersion,
    PackageRecord,
    Published,
    TokenInfo,
    User,
    VersionRecord,
)
from registry_server.storage.blobs import Blobs
from registry_server.storage.memory import now_ms
from registry_server.storage.sql import SQLStorage
from strawpot.model.kinds import Kind

if TYPE_CHECKING:
    from registry_server.mirror.upstream import Upstream

log = logging.getLogger("registry_server")
RETRY_AFTER = 5  # seconds: after a failed request upstream is not asked again before this (nor told to clients)
_UPSTREAM_OWNER = User(0, "upstream", "upstream", "")
_MAX_ORIGINS = 500_000
_TOUCH_EVERY = 60.0  # seconds between two writes of an archive's last use (the LRU order)


class MirrorStorage:
    """A `Storage`: `local` for everything this registry owns, upstream (cached) for the other names."""

    def __init__(self, local: SQLStorage, blobs: Blobs, upstream: Upstream, *, ttl: float,
                 cache_max: int | None = None, hop_id: str = "") -> None:
        self.local, self.cache_blobs, self.upstream, self.ttl = local, blobs, upstream, ttl
        self.cache_max, self.hop_id = cache_max, hop_id
        self.tables = MirrorTables(local)
        self.remote = local.remote
        self.forget_cached: Callable[[Kind, str], None] = lambda kind, slug: None  # the app's in-process cache
        self._expiry: list[tuple[float, str, str]] = []  # (when, kind, slug) of what the app may hold in memory
        self._origins: dict[str, tuple[Kind, str, str, VersionRecord]] = {}  # blob sha256 → where it comes from
        self._touched: dict[str, float] = {}  # sha256 → when its last use was written (monotonic)
        self._unwritten: set[str] = set()  # archives used since, not yet written (blob_path runs on the event loop)
        self._down_until = 0.0
        self._last_failure: UpstreamFailed | None = None
        self._lock = threading.Lock()
        self._fetching: dict[str, threading.Lock] = {}

    # -- names and metadata ---------------------------------------------------------------------------

    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None:
        self._write_uses()
        records = self.local.versions(kind, slug)
        if records is not None:
            return records
        found = self.upstream_package(kind, slug)
        return None if found is None else found.records

    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        pkg = self.local.get_package(kind, slug)
        if pkg is not None:
            return pkg
        found = self.upstream_package(kind, slug)
        if found is None:
            return None
        stamp = max((r.created_at for r in found.records), default=found.fetched_at)
        return PackageRecord(kind=kind, slug=slug, display_name=slug, summary=f"mirrored from {found.upstream}",
                             owner=_UPSTREAM_OWNER, downloads=0, stars=0, version_count=len(found.records),
                             created_at=stamp, updated_at=stamp)

    def upstream_package(self, kind: Kind, slug: str) -> CachedPackage | None:
        """Upstream's versions of a name this registry does not hold: cached if fresh, else asked (the cache when
        upstream fails); None when it is ours or upstream has no such package. Raises UpstreamUnavailable when
        upstream fails and nothing is cached."""
        if self.tables.taken_locally(kind, slug):
            return None
        cached = self.tables.cached(kind, slug)
        if cached is not None and time.time() * 1000 - cached.fetched_at < self.ttl * 1000:
            self._remember(kind, slug, cached, cached.fetched_at / 1000 + self.ttl)
            return cached
        failure = self._ask(kind, slug)
        if not isinstance(failure, UpstreamFailed):
            return failure if failure is None else self._remember(kind, slug, failure, time.time() + self.ttl)
        if cached is None:
            raise UpstreamUnavailable(str(failure), refused=failure.refused)
        age = int(time.time() - cached.fetched_at / 1000)
        log.warning("upstream unreachable: %s %s served from the mirror's cache (fetched %d s ago): %s",
                    kind.value, slug, age, failure)
        mark_stale()
        self.forget_cached(kind, slug)  # kept out of memory, so the next request asks again (after the pause)
        return self._remember(kind, slug, cached, None)

    def _ask(self, kind: Kind, slug: str) -> CachedPackage | UpstreamFailed | None:
        """Upstream's answer (stored), None when it has no such package, or why it could not answer."""
        if time.monotonic() < self._down_until and self._last_failure is not None:
            return self._last_failure
        try:
            got = self.upstream.versions(kind, slug)
        except UpstreamFailed as exc:
            if not exc.refused:  # unreachable: leave it alone a moment; a refused answer was about this package
                self._down_until, self._last_failure = time.monotonic() + RETRY_AFTER, exc
            return exc
        if got is None or self.tables.taken_locally(kind, slug):  # gone upstream, or made ours meanwhile
            self.tables.forget(kind, slug)
            return None
        fresh = CachedPackage(got[0], got[1], now_ms())
        self.tables.store(kind, slug, fresh.upstream, fresh.records, fresh.fetched_at)
        return fresh

    def _remember(self, kind: Kind, slug: str, found: CachedPackage, until: float | None) -> CachedPackage:
        with self._lock:
            if until is not None:
                heapq.heappush(self._expiry, (until, kind.value, slug))
            if len(self._origins) > _MAX_ORIGINS:
                self._origins.clear()
            for record in found.records:
                origin = (kind, slug, found.upstream, record)
                self._origins[record.archive_sha256] = origin
                for entry in record.files:
                    self._origins[entry.sha256] = origin
        return found

    def expire(self) -> None:
        """Tell the app's in-process cache to drop every mirrored package whose TTL has run out (per request)."""
        if not self._expiry or self._expiry[0][0] > time.time():
            return
        now, due = time.time(), []
        with self._lock:
            while self._expiry and self._expiry[0][0] <= now:
                due.append(heapq.heappop(self._expiry))
        for _, kind, slug in due:
            self.forget_cached(Kind(kind), slug)

    def shadowing(self, kind: Kind, slug: str) -> str | None:
        """Why publishing this name here is refused (upstream has it, so clients may already use upstream's), or
        None. Asks upstream for a name it has not seen; a reserved or local name is never refused."""
        if self.upstream_package(kind, slug) is None:
            return None
        return (f"{kind.value} {slug!r} is a package of the upstream registry this mirror serves; publishing it here "
                f"would shadow it: publish under another name, or have an admin reserve the name first "
                f"(strawpot registry reserve {kind.value}:{slug})")

    # -- blobs: ours, then the cache's, then upstream -------------------------------------------------

    def get_blob(self, sha256: str) -> bytes | None:
        data = self.local.get_blob(sha256)
        if data is None and self._cached_or_fetched(sha256):
            data = self.cache_blobs.get(sha256)
        return data

    def open_blob(self, sha256: str) -> Iterator[bytes] | None:
        chunks = self.local.open_blob(sha256)
        if chunks is None and self._cached_or_fetched(sha256):
            chunks = self.cache_blobs.open(sha256)
        return chunks

    @property
    def remote_blobs(self) -> bool:
        return True  # a blob may have to come from upstream: never read on the event loop

    def blob_path(self, sha256: str) -> Path | None:
        """A file already here (ours or cached); None leaves the read (and a fetch) to a worker thread. Called on
        the event loop: the use is only noted, and written by the next call on a worker thread."""
        path = self.local.blob_path(sha256)
        if path is None and (path := self.cache_blobs.existing_path(sha256)) is not None:
            self._unwritten.add(sha256)
        return path

    def _cached_or_fetched(self, sha256: str) -> bool:
        """Blocking: whether the blob is in the cache now, fetched from upstream if its archive is known."""
        self._write_uses()
        origin = self._origins.get(sha256)
        if self.cache_blobs.existing_path(sha256) is not None or (self.cache_blobs.remote and origin is None):
            self._touch(sha256)
            return True
        if origin is None:
            return False
        key = origin[3].archive_sha256
        with self._lock:
            lock = self._fetching.setdefault(key, threading.Lock())
        try:
            with lock:  # one fetch per archive, however many requests want it
                if self.cache_blobs.get(sha256) is None:
                    self._fetch(*origin)
        finally:
            with self._lock:
                self._fetching.pop(key, None)  # those still waiting hold it; the next finds the blob stored
        return True

    def _fetch(self, kind: Kind, slug: str, url: str, record: VersionRecord) -> None:
        try:
            data, members = self.upstream.archive(url, kind, slug, record)
        except UpstreamFailed as exc:
            log.warning("%s", exc)
            raise UpstreamUnavailable(str(exc), refused=exc.refused) from None
        files = [self.cache_blobs.put(m.data) for m in members]  # the files first, then the archive naming them
        self.cache_blobs.put(data)
        self.tables.archive_stored(kind, slug, record, files)
        if self.cache_max is not None:
            from registry_server.mirror.evict import evict

            evict(self.tables, self.cache_blobs, self.cache_max, keep=record.archive_sha256)

    def _touch(self, sha256: str) -> None:
        now = time.monotonic()
        if now - self._touched.get(sha256, -_TOUCH_EVERY) >= _TOUCH_EVERY:
            self._touched[sha256] = now
            self.tables.archive_used(sha256)

    def _write_uses(self) -> None:
        while self._unwritten:
            try:
                self._touch(self._unwritten.pop())
            except KeyError:  # another thread took the last one
                break

    # -- everything else is the local registry's --------------------------------------------------------

    def ensure_user(self, handle: str, *, role: str | None = None) -> User:
        return self.local.ensure_user(handle, role=role)

    def add_token(self, user_id: int, token_hash: str) -> None:
        self.local.add_token(user_id, token_hash)

    def user_by_token(self, token_hash: str) -> User | None:
        return self.local.user_by_token(token_hash)

    def list_tokens(self) -> list[TokenInfo]:
        return self.local.list_tokens()

    def revoke_token(self, token_hash: str) -> bool:
        return self.local.revoke_token(token_hash)

    def user_by_handle(self, handle: str) -> User | None:
        return self.local.user_by_handle(handle)

    def set_role(self, handle: str, role: str) -> User | None:
        return self.local.set_role(handle, role)

    def set_banned(self, handle: str, banned: bool, reason: str | None) -> User | None:
        return self.local.set_banned(handle, banned, reason)

    # publisher keys and the transparency log are the mirror's own: a mirrored package keeps upstream's statement
    def add_key(self, user: User, key_id: str, public_key: str) -> KeyRecord:
        return self.local.add_key(user, key_id, public_key)

    def keys_of(self, handle: str) -> list[KeyRecord]:
        return self.local.keys_of(handle)

    def key(self, key_id: str) -> KeyRecord | None:
        return self.local.key(key_id)

    def revoke_key(self, user: User, key_id: str) -> KeyRecord | None:
        return self.local.revoke_key(user, key_id)

    def log_size(self) -> int:
        return self.local.log_size()

    def log_entries(self, start: int, end: int) -> list[str]:
        return self.local.log_entries(start, end)

    def log_leaves(self, size: int) -> list[bytes]:
        return self.local.log_leaves(size)

    def registry_key(self, make: Callable[[], str]) -> str:
        return self.local.registry_key(make)

    def add_advisory(self, advisory: Advisory) -> Advisory:
        return self.local.add_advisory(advisory)

    def advisories(self, kind: Kind | None = None, slug: str | None = None) -> list[Advisory]:
        return self.local.advisories(kind, slug)  # the mirror's own; upstream's are not mirrored

    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]:
        return self.local.list_packages(kind, sort, limit)

    def publish(self, new: NewVersion, owner: User) -> Published:
        return self.local.publish(new, owner)

    def publish_batch(self, news: Sequence[NewVersion], owner: User) -> list[Published]:
        return self.local.publish_batch(news, owner)

    def set_yanked(self, kind: Kind, slug: str, version: str, yanked: bool) -> bool:
        return self.local.set_yanked(kind, slug, version, yanked)

    def delete_package(self, kind: Kind, slug: str) -> bool:
        return self.local.delete_package(kind, slug)

    def add_download(self, kind: Kind, slug: str) -> bool:
        return self.local.add_download(kind, slug)

    def add_downloads(self, counts: Mapping[tuple[Kind, str], int]) -> None:
        self.local.add_downloads(counts)

    def toggle_star(self, user: User, kind: Kind, slug: str) -> tuple[bool, int] | None:
        return self.local.toggle_star(user, kind, slug)

    def change_seq(self) -> int:
        return self.local.change_seq()

    def live_blobs(self) -> set[str]:
        return self.local.live_blobs()

    def put_blob(self, data: bytes) -> str:
        return self.local.put_blob(data)

    def list_blobs(self) -> Iterator[tuple[str, float]]:
        return self.local.list_blobs()

    def delete_blob(self, sha256: str) -> None:
        self.local.delete_blob(sha256)

    def close(self) -> None:
        self._write_uses()
        self.upstream.close()
        self.local.close()
