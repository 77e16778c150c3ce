"""The registry's metadata in SQL, written once for SQLite and PostgreSQL; a dialect supplies the connections.

The queries use `?` placeholders and the subset of SQL both databases speak (`RETURNING`, `ON CONFLICT`);
integers stand for booleans. Every publish, yank and delete bumps `registry_changes.seq` in its own
transaction, so any process can tell cheaply whether its caches are still current (`change_seq`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from registry_server.storage.advisories import SQLAdvisories
from registry_server.storage.base import (
    FileEntry,
    NewVersion,
    PackageRecord,
    Published,
    StoredPackage,
    TokenInfo,
    User,
    VersionRecord,
    check_publish,
)
from registry_server.storage.blobs import Blobs
from registry_server.storage.memory import now_ms
from registry_server.storage.provenance_sql import ProvenanceSQL, append
from strawpot.model.kinds import Kind
from strawpot.model.log_entries import publish_entry, yank_entry

_PACKAGE_COLUMNS = """
    p.id, p.kind, p.slug, p.display_name, p.summary, p.tags, p.downloads, p.created_at, p.updated_at,
    u.id, u.handle, u.display_name, u.email, u.role, u.banned,
    (SELECT count(*) FROM stars s WHERE s.package_id = p.id) AS n_stars,
    (SELECT count(*) FROM versions v WHERE v.package_id = p.id) AS n_versions
"""
_SORT = {"downloads": "p.downloads DESC", "stars": "n_stars DESC"}
_USER = "SELECT u.id, u.handle, u.display_name, u.email, u.role, u.banned FROM users u"
_BUMP = "UPDATE registry_changes SET seq = seq + 1 WHERE id = 1"


class Tx(Protocol):
    """One connection inside a transaction (or autocommit for reads), `?` placeholders."""

    def one(self, sql: str, *args: Any) -> tuple[Any, ...] | None: ...
    def all(self, sql: str, *args: Any) -> list[tuple[Any, ...]]: ...
    def run(self, sql: str, *args: Any) -> int: ...
    def many(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None: ...


def _user(row: tuple[Any, ...]) -> User:
    return User(int(row[0]), row[1], row[2], row[3], row[4], bool(row[5]))


def _package(row: tuple[Any, ...]) -> PackageRecord:
    return PackageRecord(
        kind=Kind(row[1]), slug=row[2], display_name=row[3], summary=row[4],
        tags=tuple(t for t in row[5].split(",") if t), downloads=int(row[6]), created_at=int(row[7]),
        updated_at=int(row[8]), owner=_user(row[9:15]), stars=int(row[15]), version_count=int(row[16]), id=int(row[0]),
    )


def _version(row: tuple[Any, ...]) -> VersionRecord:
    meta = json.loads(row[3])
    return VersionRecord(
        id=int(row[0]), version=row[1], changelog=row[2], archive_sha256=row[4], archive_size=int(row[5]),
        yanked=bool(row[6]), created_at=int(row[7]), dependencies=meta.get("dependencies") or {},
        default_agent=meta.get("defaultAgent"), tools=meta.get("tools") or {},
        files=tuple(FileEntry.from_json(f) for f in meta.get("files", [])),
        statement=row[9], signature=row[10], key_id=row[11], log_index=None if row[12] is None else int(row[12]),
    )


class SQLStorage(SQLAdvisories, ProvenanceSQL):
    """`Storage` over a SQL database and a blob store; subclasses open the connections."""

    blobs: Blobs
    remote = False

    def _read(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Tx]:
        """One write transaction; writers of the same database queue instead of deadlocking."""
        raise NotImplementedError

    def _lock_package(self, db: Tx, kind: Kind, slug: str) -> None:
        """Serialise publishes of one package inside `db`'s transaction (SQLite's writes are serial already)."""

    def _before_commit(self) -> None:
        """A seam for tests that inject a crash between the blob writes and the commit."""

    def close(self) -> None:
        raise NotImplementedError

    # users and tokens
    def ensure_user(self, handle: str, *, role: str | None = None) -> User:
        with self._write() as db:
            db.run(
                "INSERT INTO users (handle, display_name, role, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (handle) DO NOTHING", handle, handle, role or "user", now_ms(),
            )
            if role is not None:
                db.run("UPDATE users SET role = ? WHERE handle = ?", role, handle)
        user = self.user_by_handle(handle)
        assert user is not None
        return user

    def add_token(self, user_id: int, token_hash: str) -> None:
        with self._write() as db:
            db.run("INSERT INTO tokens (hash, user_id, created_at) VALUES (?, ?, ?)", token_hash, user_id, now_ms())

    def list_tokens(self) -> list[TokenInfo]:
        with self._read() as db:
            rows = db.all("SELECT t.hash, u.handle, t.created_at FROM tokens t JOIN users u ON u.id = t.user_id"
                          " ORDER BY t.created_at, t.hash")
        return [TokenInfo(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def revoke_token(self, token_hash: str) -> bool:
        with self._write() as db:
            return db.run("DELETE FROM tokens WHERE hash = ?", token_hash) > 0

    def _one(self, sql: str, *args: Any) -> tuple[Any, ...] | None:
        with self._read() as db:
            return db.one(sql, *args)

    def user_by_token(self, token_hash: str) -> User | None:
        row = self._one(f"{_USER} JOIN tokens t ON t.user_id = u.id WHERE t.hash = ?", token_hash)
        return None if row is None else _user(row)

    def user_by_handle(self, handle: str) -> User | None:
        row = self._one(f"{_USER} WHERE u.handle = ?", handle)
        return None if row is None else _user(row)

    def set_role(self, handle: str, role: str) -> User | None:
        with self._write() as db:
            db.run("UPDATE users SET role = ? WHERE handle = ?", role, handle)
        return self.user_by_handle(handle)

    def set_banned(self, handle: str, banned: bool, reason: str | None) -> User | None:
        with self._write() as db:
            db.run("UPDATE users SET banned = ?, ban_reason = ? WHERE handle = ?", int(banned), reason, handle)
        return self.user_by_handle(handle)

    # packages
    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        row = self._one(
            f"SELECT {_PACKAGE_COLUMNS} FROM packages p JOIN users u ON u.id = p.owner_id"
            " WHERE p.kind = ? AND p.slug = ? AND p.deleted = 0", kind.value, slug,
        )
        return None if row is None else _package(row)

    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]:
        where = "p.deleted = 0" + (" AND p.kind = ?" if kind else "")
        order = _SORT.get(sort, "p.updated_at DESC")
        with self._read() as db:
            rows = db.all(
                f"SELECT {_PACKAGE_COLUMNS} FROM packages p JOIN users u ON u.id = p.owner_id"
                f" WHERE {where} ORDER BY {order}, p.id DESC LIMIT ?", *([kind.value] if kind else []), limit,
            )
        return [_package(r) for r in rows]

    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None:
        with self._read() as db:
            rows = db.all(
                "SELECT v.id, v.version, v.changelog, v.meta, v.archive_sha256, v.archive_size, v.yanked,"
                " v.created_at, p.id, v.statement, v.signature, v.key_id, v.log_index FROM packages p LEFT JOIN versions v ON v.package_id = p.id"
                " WHERE p.kind = ? AND p.slug = ? AND p.deleted = 0 ORDER BY v.id", kind.value, slug,
            )
        if not rows:
            return None
        return [_version(r) for r in rows if r[0] is not None]

    def publish(self, new: NewVersion, owner: User) -> Published:
        return self.publish_batch([new], owner)[0]

    def publish_batch(self, news: Sequence[NewVersion], owner: User) -> list[Published]:
        stamp = now_ms()
        done: dict[int, Published] = {}
        with self._write() as db:
            # each package locked just before its rows are written, all in one order: no lock cycles
            for i in sorted(range(len(news)), key=lambda i: (news[i].kind.value, news[i].slug)):
                self._lock_package(db, news[i].kind, news[i].slug)
                done[i] = self._insert(db, news[i], owner, stamp)
            # logged after every package lock is held: the log's one lock is always taken last (no cycles)
            for i, new in enumerate(news):
                rec = new.record
                index = append(db, publish_entry(new.kind, new.slug, rec.version, rec.archive_sha256, owner.handle,
                                                 rec.statement, rec.key_id, stamp))
                db.run("UPDATE versions SET log_index = ? WHERE id = ?", index, done[i].version_id)
            db.run(_BUMP)
            self._before_commit()
        return [done[i] for i in range(len(news))]

    def _insert(self, db: Tx, new: NewVersion, owner: User, stamp: int) -> Published:
        rec = new.record
        tags = ",".join(new.tags)
        row = db.one("SELECT id, owner_id, deleted FROM packages WHERE kind = ? AND slug = ?", new.kind.value, new.slug)
        stored = None if row is None else StoredPackage(
            int(row[1]), bool(row[2]), [v for (v,) in db.all("SELECT version FROM versions WHERE package_id = ?", row[0])]
        )
        check_publish(new.kind, new.slug, stored, owner, rec.version)
        if row is None:
            created = db.one(
                "INSERT INTO packages (kind, slug, owner_id, display_name, summary, tags, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                new.kind.value, new.slug, owner.id, new.display_name, new.summary, tags, stamp, stamp,
            )
            assert created is not None
            package_id = int(created[0])
        else:
            package_id = int(row[0])
            db.run("UPDATE packages SET display_name = ?, summary = ?, tags = ?, updated_at = ? WHERE id = ?",
                   new.display_name, new.summary, tags, stamp, package_id)
        inserted = db.one(
            "INSERT INTO versions (package_id, version, changelog, meta, archive_sha256, archive_size, created_at,"
            " statement, signature, key_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            package_id, rec.version, rec.changelog, json.dumps(rec.meta_json(), sort_keys=True), rec.archive_sha256,
            rec.archive_size, stamp, rec.statement, rec.signature, rec.key_id,
        )
        assert inserted is not None
        return Published(package_id, int(inserted[0]))

    def set_yanked(self, kind: Kind, slug: str, version: str, yanked: bool) -> bool:
        with self._write() as db:
            changed = db.run(
                "UPDATE versions SET yanked = ? WHERE version = ? AND package_id ="
                " (SELECT id FROM packages WHERE kind = ? AND slug = ? AND deleted = 0)",
                int(yanked), version, kind.value, slug,
            )
            if changed:
                append(db, yank_entry(kind, slug, version, yanked, now_ms()))
            db.run(_BUMP)
        return changed > 0

    def delete_package(self, kind: Kind, slug: str) -> bool:
        with self._write() as db:
            changed = db.run("UPDATE packages SET deleted = 1 WHERE kind = ? AND slug = ? AND deleted = 0", kind.value, slug)
            db.run(_BUMP)
        return changed > 0

    def add_download(self, kind: Kind, slug: str) -> bool:
        with self._write() as db:
            return db.run(
                "UPDATE packages SET downloads = downloads + 1 WHERE kind = ? AND slug = ? AND deleted = 0",
                kind.value, slug,
            ) > 0

    def add_downloads(self, counts: Mapping[tuple[Kind, str], int]) -> None:
        with self._write() as db:
            db.many(
                "UPDATE packages SET downloads = downloads + ? WHERE kind = ? AND slug = ? AND deleted = 0",
                [(n, kind.value, slug) for (kind, slug), n in sorted(counts.items(), key=lambda kv: (kv[0][0].value, kv[0][1]))],
            )

    def toggle_star(self, user: User, kind: Kind, slug: str) -> tuple[bool, int] | None:
        with self._write() as db:
            row = db.one("SELECT id FROM packages WHERE kind = ? AND slug = ? AND deleted = 0", kind.value, slug)
            if row is None:
                return None
            removed = db.run("DELETE FROM stars WHERE user_id = ? AND package_id = ?", user.id, row[0])
            if not removed:
                db.run("INSERT INTO stars (user_id, package_id) VALUES (?, ?)", user.id, row[0])
            count = db.one("SELECT count(*) FROM stars WHERE package_id = ?", row[0])
        assert count is not None
        return not removed, int(count[0])

    # changes, seen by every process
    def change_seq(self) -> int:
        row = self._one("SELECT seq FROM registry_changes WHERE id = 1")
        return 0 if row is None else int(row[0])

    def live_blobs(self) -> set[str]:
        """Every blob a version of a package not deleted names (its files and its archive)."""
        live: set[str] = set()
        with self._read() as db:
            rows = db.all("SELECT v.meta, v.archive_sha256 FROM versions v JOIN packages p ON p.id = v.package_id"
                          " WHERE p.deleted = 0")
        for meta, archive in rows:
            live.add(archive)
            live.update(f["sha256"] for f in json.loads(meta).get("files", []))
        return live

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
        return self.blobs.existing_path(sha256)

    def list_blobs(self) -> Iterator[tuple[str, float]]:
        return self.blobs.list()

    def delete_blob(self, sha256: str) -> None:
        self.blobs.delete(sha256)
