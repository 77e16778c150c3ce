"""The mirror's own tables in the registry's database: upstream metadata with the time it was fetched, the archives
cached from upstream (for the LRU bound), and the names reserved for local packages (schema migration 3)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from registry_server.render import version_ext
from registry_server.storage.base import FileEntry, VersionRecord
from registry_server.storage.memory import now_ms
from registry_server.storage.sql import SQLStorage
from strawpot.model.kinds import Kind


@dataclass(frozen=True)
class CachedPackage:
    """Upstream's versions of one package as last fetched, and when (ms since the epoch)."""

    upstream: str  # the registry that served it (its archives come from there too)
    records: list[VersionRecord]
    fetched_at: int


@dataclass(frozen=True)
class CachedArchive:
    sha256: str
    kind: Kind
    slug: str
    version: str
    size: int
    files: tuple[str, ...]  # the sha256 of each file blob stored with it
    used_at: int


def dump_records(upstream: str, records: list[VersionRecord]) -> str:
    return json.dumps({"upstream": upstream, "versions": [{**version_ext(r), "changelog": r.changelog} for r in records]},
                      separators=(",", ":"))


def load_records(body: str) -> tuple[str, list[VersionRecord]]:
    """What `dump_records` wrote (bodies this server wrote after checking them)."""
    out = []
    document = json.loads(body)
    for item in document["versions"]:
        data: dict[str, Any] = item
        out.append(VersionRecord(
            version=data["version"], changelog=data.get("changelog", ""), dependencies=data["dependencies"],
            files=tuple(FileEntry.from_json(f) for f in data["files"]), archive_sha256=data["sha256"],
            archive_size=int(data["size"]), created_at=int(data.get("createdAt") or 0),
            default_agent=data.get("defaultAgent"), tools=data.get("tools") or {}, yanked=bool(data["yanked"]),
            log_index=data.get("logIndex"), log=data.get("log"), **_provenance(data.get("provenance")),
        ))
    return str(document["upstream"]), out


def _provenance(data: Any) -> dict[str, Any]:
    """A cached version's signed statement, as `version_ext` wrote it (upstream's, passed through)."""
    if not isinstance(data, dict):
        return {}
    return {"statement": data.get("statement"), "signature": data.get("signature"), "key_id": data.get("keyId")}


class MirrorTables:
    """Reads and writes of the mirror's tables, through the storage's own connections."""

    def __init__(self, storage: SQLStorage) -> None:
        self.storage = storage

    def taken_locally(self, kind: Kind, slug: str) -> bool:
        """Whether the name is this registry's own: published here (deleted ones included) or reserved."""
        with self.storage._read() as db:
            row = db.one("SELECT 1 FROM packages WHERE kind = ? AND slug = ? UNION ALL"
                         " SELECT 1 FROM reserved_names WHERE kind = ? AND slug = ?", kind.value, slug, kind.value, slug)
        return row is not None

    def reserve(self, kind: Kind, slug: str) -> bool:
        """Reserve the name (False if it was already); what was cached of it from upstream is forgotten."""
        with self.storage._write() as db:
            added = db.run("INSERT INTO reserved_names (kind, slug, created_at) VALUES (?, ?, ?)"
                           " ON CONFLICT (kind, slug) DO NOTHING", kind.value, slug, now_ms())
            db.run("DELETE FROM upstream_packages WHERE kind = ? AND slug = ?", kind.value, slug)
            db.run("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")  # every worker drops what it holds
        return added > 0

    def reserved(self) -> list[tuple[Kind, str]]:
        with self.storage._read() as db:
            rows = db.all("SELECT kind, slug FROM reserved_names ORDER BY kind, slug")
        return [(Kind(k), s) for k, s in rows]

    def cached(self, kind: Kind, slug: str) -> CachedPackage | None:
        with self.storage._read() as db:
            row = db.one("SELECT body, fetched_at FROM upstream_packages WHERE kind = ? AND slug = ?", kind.value, slug)
        return None if row is None else CachedPackage(*load_records(row[0]), int(row[1]))

    def is_cached(self, kind: Kind, slug: str) -> bool:
        with self.storage._read() as db:
            return db.one("SELECT 1 FROM upstream_packages WHERE kind = ? AND slug = ?", kind.value, slug) is not None

    def store(self, kind: Kind, slug: str, upstream: str, records: list[VersionRecord], fetched_at: int) -> None:
        with self.storage._write() as db:
            db.run("INSERT INTO upstream_packages (kind, slug, body, fetched_at) VALUES (?, ?, ?, ?)"
                   " ON CONFLICT (kind, slug) DO UPDATE SET body = excluded.body, fetched_at = excluded.fetched_at",
                   kind.value, slug, dump_records(upstream, records), fetched_at)

    def forget(self, kind: Kind, slug: str) -> None:
        """Upstream no longer has the package: its metadata goes (its archives stay, immutable, until evicted)."""
        with self.storage._write() as db:
            db.run("DELETE FROM upstream_packages WHERE kind = ? AND slug = ?", kind.value, slug)

    def archive_stored(self, kind: Kind, slug: str, record: VersionRecord, files: list[str]) -> None:
        with self.storage._write() as db:
            db.run("INSERT INTO upstream_archives (sha256, kind, slug, version, size, files, used_at)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sha256) DO UPDATE SET used_at = excluded.used_at",
                   record.archive_sha256, kind.value, slug, record.version, record.archive_size, ",".join(files),
                   now_ms())

    def archive_used(self, sha256: str) -> None:
        with self.storage._write() as db:
            db.run("UPDATE upstream_archives SET used_at = ? WHERE sha256 = ?", now_ms(), sha256)

    def archives(self) -> list[CachedArchive]:
        """Every cached archive, least recently used first."""
        with self.storage._read() as db:
            rows = db.all("SELECT sha256, kind, slug, version, size, files, used_at FROM upstream_archives"
                          " ORDER BY used_at, sha256")
        return [CachedArchive(r[0], Kind(r[1]), r[2], r[3], int(r[4]), tuple(f for f in r[5].split(",") if f),
                              int(r[6])) for r in rows]

    def local_dependencies(self) -> set[tuple[Kind, str]]:
        """Every package a version of a local package (not deleted) depends on, or names as its default agent."""
        from strawpot.model.dependencies import read_edges

        with self.storage._read() as db:
            rows = db.all("SELECT p.kind, v.meta FROM versions v JOIN packages p ON p.id = v.package_id"
                          " WHERE p.deleted = 0")
        held: set[tuple[Kind, str]] = set()
        for kind, meta in rows:
            data = json.loads(meta)
            held.update((e.kind, e.name) for e in read_edges(Kind(kind), data.get("dependencies") or {}).edges)
            if data.get("defaultAgent"):
                held.add((Kind.AGENT, data["defaultAgent"]))
        return held

    def drop_archive(self, sha256: str) -> None:
        with self.storage._write() as db:
            db.run("DELETE FROM upstream_archives WHERE sha256 = ?", sha256)
