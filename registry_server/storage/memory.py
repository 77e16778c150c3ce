"""An in-memory `Storage` for tests: the same rules as SQLite, guarded by one lock."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from registry_server.storage.base import (
    Advisory,
    KeyConflict,
    KeyRecord,
    NewVersion,
    PackageRecord,
    Published,
    StoredPackage,
    TokenInfo,
    User,
    VersionRecord,
    check_publish,
)
from registry_server.storage.blobs import MemoryBlobs
from strawpot.model.kinds import Kind
from strawpot.model.log_entries import key_entry, leaf_hex, publish_entry, yank_entry


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclasses.dataclass
class _Package:
    id: int
    kind: Kind
    slug: str
    owner_id: int
    display_name: str
    summary: str
    tags: tuple[str, ...]
    created_at: int
    updated_at: int
    downloads: int = 0
    deleted: bool = False
    versions: list[VersionRecord] = dataclasses.field(default_factory=list)
    stars: set[int] = dataclasses.field(default_factory=set)


class MemoryStorage:
    """Everything in dicts; blobs in a `MemoryBlobs`."""

    remote = False

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._users: dict[int, User] = {}
        self._tokens: dict[str, int] = {}
        self._token_times: dict[str, int] = {}
        self._packages: dict[tuple[Kind, str], _Package] = {}
        self._next_id = 1
        self._seq = 0
        self._advisories: list[Advisory] = []
        self.blobs = MemoryBlobs()
        self._keys: dict[str, KeyRecord] = {}
        self._log: list[str] = []
        self._registry_key: str | None = None

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    # users and tokens
    def ensure_user(self, handle: str, *, role: str | None = None) -> User:
        with self._lock:
            user = self.user_by_handle(handle)
            if user is None:
                user = User(self._new_id(), handle, handle, "", role or "user")
            elif role is not None:
                user = dataclasses.replace(user, role=role)
            self._users[user.id] = user
            return user

    def add_token(self, user_id: int, token_hash: str) -> None:
        with self._lock:
            self._tokens[token_hash] = user_id
            self._token_times[token_hash] = now_ms()

    def user_by_token(self, token_hash: str) -> User | None:
        user_id = self._tokens.get(token_hash)
        return None if user_id is None else self._users.get(user_id)

    def list_tokens(self) -> list[TokenInfo]:
        with self._lock:
            rows = [(self._token_times.get(h, 0), h, self._users[u].handle) for h, u in self._tokens.items()]
        return [TokenInfo(h, handle, created) for created, h, handle in sorted(rows)]

    def revoke_token(self, token_hash: str) -> bool:
        with self._lock:
            self._token_times.pop(token_hash, None)
            return self._tokens.pop(token_hash, None) is not None

    def user_by_handle(self, handle: str) -> User | None:
        return next((u for u in self._users.values() if u.handle == handle), None)

    def _update_user(self, handle: str, **changes: object) -> User | None:
        with self._lock:
            user = self.user_by_handle(handle)
            if user is None:
                return None
            user = dataclasses.replace(user, **changes)  # type: ignore[arg-type]
            self._users[user.id] = user
            return user

    def set_role(self, handle: str, role: str) -> User | None:
        return self._update_user(handle, role=role)

    def set_banned(self, handle: str, banned: bool, reason: str | None) -> User | None:
        return self._update_user(handle, banned=banned)

    # packages
    def _live(self, kind: Kind, slug: str) -> _Package | None:
        pkg = self._packages.get((kind, slug))
        return pkg if pkg is not None and not pkg.deleted and pkg.versions else None

    def _record(self, pkg: _Package) -> PackageRecord:
        return PackageRecord(
            kind=pkg.kind, slug=pkg.slug, display_name=pkg.display_name, summary=pkg.summary,
            owner=self._users[pkg.owner_id], downloads=pkg.downloads, stars=len(pkg.stars),
            version_count=len(pkg.versions), created_at=pkg.created_at, updated_at=pkg.updated_at,
            tags=pkg.tags, id=pkg.id,
        )

    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        with self._lock:
            pkg = self._live(kind, slug)
            return None if pkg is None else self._record(pkg)

    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]:
        with self._lock:
            records = [
                self._record(p) for p in self._packages.values()
                if (kind is None or p.kind is kind) and self._live(p.kind, p.slug) is not None
            ]
        field = {"downloads": "downloads", "stars": "stars"}.get(sort, "updated_at")
        records.sort(key=lambda r: (-getattr(r, field), -r.id))  # ties: the newest package first
        return records[:limit]

    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None:
        with self._lock:
            pkg = self._live(kind, slug)
            return None if pkg is None else list(pkg.versions)

    def publish(self, new: NewVersion, owner: User) -> Published:
        return self.publish_batch([new], owner)[0]

    def publish_batch(self, news: Sequence[NewVersion], owner: User) -> list[Published]:
        with self._lock:
            planned: dict[tuple[Kind, str], list[str]] = {}
            for new in news:  # every check before any change: all or nothing
                pkg = self._packages.get((new.kind, new.slug))
                key = (new.kind, new.slug)
                existing = planned.setdefault(key, [] if pkg is None else [v.version for v in pkg.versions])
                stored = None if pkg is None and len(existing) == 0 else StoredPackage(
                    owner.id if pkg is None else pkg.owner_id, pkg is not None and pkg.deleted, list(existing)
                )
                check_publish(new.kind, new.slug, stored, owner, new.record.version)
                existing.append(new.record.version)
            return [self._add(new, owner) for new in news]

    def _add(self, new: NewVersion, owner: User) -> Published:
        pkg = self._packages.get((new.kind, new.slug))
        stamp = now_ms()
        if pkg is None:
            pkg = _Package(self._new_id(), new.kind, new.slug, owner.id, new.display_name, new.summary,
                           new.tags, stamp, stamp)
            self._packages[(new.kind, new.slug)] = pkg
        index = self._append(publish_entry(new.kind, new.slug, new.record.version, new.record.archive_sha256,
                                           owner.handle, new.record.statement, new.record.key_id, stamp))
        record = dataclasses.replace(new.record, id=self._new_id(), created_at=stamp, log_index=index)
        pkg.versions.append(record)
        pkg.display_name, pkg.summary, pkg.tags = new.display_name, new.summary, new.tags
        pkg.updated_at = stamp
        self._seq += 1
        return Published(pkg.id, record.id)

    def set_yanked(self, kind: Kind, slug: str, version: str, yanked: bool) -> bool:
        with self._lock:
            pkg = self._live(kind, slug)
            if pkg is None:
                return False
            for i, record in enumerate(pkg.versions):
                if record.version == version:
                    pkg.versions[i] = dataclasses.replace(record, yanked=yanked)
                    self._append(yank_entry(kind, slug, version, yanked, now_ms()))
                    self._seq += 1
                    return True
            return False

    def delete_package(self, kind: Kind, slug: str) -> bool:
        with self._lock:
            pkg = self._live(kind, slug)
            if pkg is None:
                return False
            pkg.deleted = True
            self._seq += 1
            return True

    # keys and the log
    def _append(self, entry: str) -> int:
        self._log.append(entry)
        return len(self._log) - 1

    def add_key(self, user: User, key_id: str, public_key: str) -> KeyRecord:
        with self._lock:
            if key_id in self._keys:
                raise KeyConflict(f"the key {key_id} is registered already (a key is never registered twice)")
            stamp = now_ms()
            index = self._append(key_entry("add", user.handle, key_id, public_key, stamp))
            self._keys[key_id] = KeyRecord(key_id, user.handle, public_key, stamp, None, index)
            self._seq += 1
            return self._keys[key_id]

    def keys_of(self, handle: str) -> list[KeyRecord]:
        with self._lock:
            return [k for k in self._keys.values() if k.handle == handle]

    def key(self, key_id: str) -> KeyRecord | None:
        with self._lock:
            return self._keys.get(key_id)

    def revoke_key(self, user: User, key_id: str) -> KeyRecord | None:
        with self._lock:
            found = self._keys.get(key_id)
            if found is None or found.handle != user.handle or found.revoked_at is not None:
                return None
            stamp = now_ms()
            self._append(key_entry("revoke", user.handle, key_id, found.public_key, stamp))
            self._keys[key_id] = dataclasses.replace(found, revoked_at=stamp)
            self._seq += 1
            return self._keys[key_id]

    def log_size(self) -> int:
        with self._lock:
            return len(self._log)

    def log_entries(self, start: int, end: int) -> list[str]:
        with self._lock:
            return self._log[max(start, 0):end]

    def log_leaves(self, size: int) -> list[bytes]:
        with self._lock:
            return [bytes.fromhex(leaf_hex(e)) for e in self._log[:size]]

    def registry_key(self, make: Callable[[], str]) -> str:
        with self._lock:
            if self._registry_key is None:
                self._registry_key = make()
            return self._registry_key

    def add_download(self, kind: Kind, slug: str) -> bool:
        with self._lock:
            pkg = self._live(kind, slug)
            if pkg is not None:
                pkg.downloads += 1
            return pkg is not None

    def add_downloads(self, counts: Mapping[tuple[Kind, str], int]) -> None:
        with self._lock:
            for (kind, slug), n in counts.items():
                pkg = self._live(kind, slug)
                if pkg is not None:
                    pkg.downloads += n

    def toggle_star(self, user: User, kind: Kind, slug: str) -> tuple[bool, int] | None:
        with self._lock:
            pkg = self._live(kind, slug)
            if pkg is None:
                return None
            starred = user.id not in pkg.stars
            (pkg.stars.add if starred else pkg.stars.discard)(user.id)
            return starred, len(pkg.stars)

    def add_advisory(self, advisory: Advisory) -> Advisory:
        with self._lock:
            stored = dataclasses.replace(advisory, id=self._new_id(), created_at=now_ms())
            self._advisories.append(stored)
            return stored

    def advisories(self, kind: Kind | None = None, slug: str | None = None) -> list[Advisory]:
        with self._lock:
            return [a for a in self._advisories
                    if (kind is None or a.kind is kind) and (slug is None or a.slug == slug)]

    def change_seq(self) -> int:
        return self._seq

    def live_blobs(self) -> set[str]:
        with self._lock:
            records = [r for p in self._packages.values() if not p.deleted for r in p.versions]
        return {r.archive_sha256 for r in records} | {f.sha256 for r in records for f in r.files}

    # blobs
    def put_blob(self, data: bytes) -> str:
        return self.blobs.put(data)

    def get_blob(self, sha256: str) -> bytes | None:
        return self.blobs.get(sha256)

    def open_blob(self, sha256: str) -> Iterator[bytes] | None:
        return self.blobs.open(sha256)

    @property
    def remote_blobs(self) -> bool:
        return self.blobs.remote

    def blob_path(self, sha256: str) -> Path | None:
        return None

    def list_blobs(self) -> Iterator[tuple[str, float]]:
        return self.blobs.list()

    def delete_blob(self, sha256: str) -> None:
        self.blobs.delete(sha256)

    def close(self) -> None:
        pass
