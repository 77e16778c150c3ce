"""The embedded `Storage`: SQLite (WAL) for metadata, a content-addressed directory for blobs."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from registry_server.storage.base import (
    NewVersion,
    PackageRecord,
    Published,
    StoredPackage,
    TokenInfo,
    User,
    VersionConflict,
    VersionRecord,
    check_publish,
)
from registry_server.storage.blobs import DirectoryBlobs
from registry_server.storage.memory import now_ms
from strawpot.model.kinds import Kind

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    handle TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    email TEXT NOT NULL DEFAULT '',
    role TEXT NOT NULL DEFAULT 'user',
    banned INTEGER NOT NULL DEFAULT 0,
    ban_reason TEXT,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS packages (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    slug TEXT NOT NULL,
    owner_id INTEGER NOT NULL REFERENCES users(id),
    display_name TEXT NOT NULL,
    summary TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '',
    downloads INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, slug)
);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL REFERENCES packages(id),
    version TEXT NOT NULL,
    changelog TEXT NOT NULL,
    meta TEXT NOT NULL,
    archive_sha256 TEXT NOT NULL,
    archive_size INTEGER NOT NULL,
    yanked INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (package_id, version)
);
CREATE TABLE IF NOT EXISTS stars (
    user_id INTEGER NOT NULL REFERENCES users(id),
    package_id INTEGER NOT NULL REFERENCES packages(id),
    PRIMARY KEY (user_id, package_id)
);
"""
_PACKAGE_COLUMNS = """
    p.id, p.kind, p.slug, p.display_name, p.summary, p.tags, p.downloads, p.created_at, p.updated_at,
    u.id, u.handle, u.display_name, u.email, u.role, u.banned,
    (SELECT count(*) FROM stars s WHERE s.package_id = p.id) AS n_stars,
    (SELECT count(*) FROM versions v WHERE v.package_id = p.id) AS n_versions
"""
_SORT = {"downloads": "p.downloads DESC", "stars": "n_stars DESC"}


def _user(row: tuple[Any, ...]) -> User:
    return User(row[0], row[1], row[2], row[3], row[4], bool(row[5]))


def _package(row: tuple[Any, ...]) -> PackageRecord:
    return PackageRecord(
        kind=Kind(row[1]), slug=row[2], display_name=row[3], summary=row[4],
        tags=tuple(t for t in row[5].split(",") if t), downloads=row[6], created_at=row[7], updated_at=row[8],
        owner=_user(row[9:15]), stars=row[15], version_count=row[16], id=row[0],
    )


def _version(row: tuple[Any, ...]) -> VersionRecord:
    from registry_server.storage.base import FileEntry

    meta = json.loads(row[3])
    return VersionRecord(
        id=row[0], version=row[1], changelog=row[2], archive_sha256=row[4], archive_size=row[5],
        yanked=bool(row[6]), created_at=row[7], dependencies=meta.get("dependencies") or {},
        default_agent=meta.get("defaultAgent"), tools=meta.get("tools") or {},
        files=tuple(FileEntry.from_json(f) for f in meta.get("files", [])),
    )


class SQLiteStorage:
    """`<data>/registry.sqlite3` (WAL) and `<data>/blobs/`.

    Connections are pooled, not per thread: a request handled on a fresh worker thread (or a timer
    thread) borrows an open connection instead of paying the connect and PRAGMAs again.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.db_path = self.data_dir / "registry.sqlite3"
        self.blobs = DirectoryBlobs(self.data_dir / "blobs")
        self._idle: list[sqlite3.Connection] = []
        self._all: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        with self._conn() as conn:
            conn.executescript(_SCHEMA)  # idempotent: every statement is IF NOT EXISTS
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        with self._pool_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """Borrow a pooled connection (one thread at a time uses it; opened on demand)."""
        with self._pool_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # never hand a half-done transaction to the next borrower
                conn.rollback()
            with self._pool_lock:
                if conn in self._all:  # not closed meanwhile
                    self._idle.append(conn)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken with BEGIN IMMEDIATE so writers queue instead of deadlocking."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _one(self, sql: str, *args: Any) -> tuple[Any, ...] | None:
        with self._conn() as conn:
            row: tuple[Any, ...] | None = conn.execute(sql, args).fetchone()
        return row

    # users and tokens
    def ensure_user(self, handle: str, *, role: str | None = None) -> User:
        with self._write() as db:
            db.execute(
                "INSERT INTO users (handle, display_name, role, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (handle) DO NOTHING",
                (handle, handle, role or "user", now_ms()),
            )
            if role is not None:
                db.execute("UPDATE users SET role = ? WHERE handle = ?", (role, handle))
        user = self.user_by_handle(handle)
        assert user is not None
        return user

    def add_token(self, user_id: int, token_hash: str) -> None:
        with self._write() as db:
            db.execute("INSERT INTO tokens (hash, user_id, created_at) VALUES (?, ?, ?)", (token_hash, user_id, now_ms()))

    def list_tokens(self) -> list[TokenInfo]:
        with self._conn() as db:
            rows = db.execute("SELECT t.hash, u.handle, t.created_at FROM tokens t JOIN users u ON u.id = t.user_id"
                              " ORDER BY t.created_at, t.hash").fetchall()
        return [TokenInfo(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def revoke_token(self, token_hash: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM tokens WHERE hash = ?", (token_hash,)).rowcount > 0

    _USER = "SELECT u.id, u.handle, u.display_name, u.email, u.role, u.banned FROM users u"

    def user_by_token(self, token_hash: str) -> User | None:
        row = self._one(f"{self._USER} JOIN tokens t ON t.user_id = u.id WHERE t.hash = ?", token_hash)
        return None if row is None else _user(row)

    def user_by_handle(self, handle: str) -> User | None:
        row = self._one(f"{self._USER} WHERE u.handle = ?", handle)
        return None if row is None else _user(row)

    def set_role(self, handle: str, role: str) -> User | None:
        with self._write() as db:
            db.execute("UPDATE users SET role = ? WHERE handle = ?", (role, handle))
        return self.user_by_handle(handle)

    def set_banned(self, handle: str, banned: bool, reason: str | None) -> User | None:
        with self._write() as db:
            db.execute("UPDATE users SET banned = ?, ban_reason = ? WHERE handle = ?", (int(banned), reason, handle))
        return self.user_by_handle(handle)

    # packages
    def _package_id(self, kind: Kind, slug: str) -> int | None:
        row = self._one("SELECT id FROM packages WHERE kind = ? AND slug = ? AND deleted = 0", kind.value, slug)
        return None if row is None else int(row[0])

    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        row = self._one(
            f"SELECT {_PACKAGE_COLUMNS} FROM packages p JOIN users u ON u.id = p.owner_id"
            " WHERE p.kind = ? AND p.slug = ? AND p.deleted = 0",
            kind.value, slug,
        )
        return None if row is None else _package(row)

    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]:
        where = "p.deleted = 0" + (" AND p.kind = ?" if kind else "")
        order = _SORT.get(sort, "p.updated_at DESC")
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {_PACKAGE_COLUMNS} FROM packages p JOIN users u ON u.id = p.owner_id"
                f" WHERE {where} ORDER BY {order}, p.id DESC LIMIT ?",
                (*([kind.value] if kind else []), limit),
            ).fetchall()
        return [_package(r) for r in rows]

    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT v.id, v.version, v.changelog, v.meta, v.archive_sha256, v.archive_size, v.yanked,"
                " v.created_at, p.id FROM packages p LEFT JOIN versions v ON v.package_id = p.id"
                " WHERE p.kind = ? AND p.slug = ? AND p.deleted = 0 ORDER BY v.id",
                (kind.value, slug),
            ).fetchall()
        if not rows:
            return None
        return [_version(r) for r in rows if r[0] is not None]

    def publish(self, new: NewVersion, owner: User) -> Published:
        rec = new.record
        stamp = now_ms()
        with self._write() as db:
            row = db.execute(
                "SELECT id, owner_id, deleted FROM packages WHERE kind = ? AND slug = ?", (new.kind.value, new.slug)
            ).fetchone()
            stored = None if row is None else StoredPackage(row[1], bool(row[2]), [
                v for (v,) in db.execute("SELECT version FROM versions WHERE package_id = ?", (row[0],))
            ])
            check_publish(new.kind, new.slug, stored, owner, rec.version)
            tags = ",".join(new.tags)
            if row is None:
                package_id = db.execute(
                    "INSERT INTO packages (kind, slug, owner_id, display_name, summary, tags, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (new.kind.value, new.slug, owner.id, new.display_name, new.summary, tags, stamp, stamp),
                ).lastrowid
            else:
                package_id = row[0]
                db.execute(
                    "UPDATE packages SET display_name = ?, summary = ?, tags = ?, updated_at = ? WHERE id = ?",
                    (new.display_name, new.summary, tags, stamp, package_id),
                )
            try:
                version_id = db.execute(
                    "INSERT INTO versions (package_id, version, changelog, meta, archive_sha256, archive_size,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (package_id, rec.version, rec.changelog, json.dumps(rec.meta_json(), sort_keys=True),
                     rec.archive_sha256, rec.archive_size, stamp),
                ).lastrowid
            except sqlite3.IntegrityError as exc:  # pragma: no cover - check_publish saw it first
                raise VersionConflict(f"version {rec.version} already exists") from exc
            self._before_commit()
        assert package_id is not None and version_id is not None
        return Published(int(package_id), int(version_id))

    def _before_commit(self) -> None:
        """A seam for tests that inject a crash between the blob writes and the commit."""

    def set_yanked(self, kind: Kind, slug: str, version: str, yanked: bool) -> bool:
        package_id = self._package_id(kind, slug)
        if package_id is None:
            return False
        with self._write() as db:
            cur = db.execute(
                "UPDATE versions SET yanked = ? WHERE package_id = ? AND version = ?", (int(yanked), package_id, version)
            )
        return cur.rowcount > 0

    def delete_package(self, kind: Kind, slug: str) -> bool:
        with self._write() as db:
            cur = db.execute(
                "UPDATE packages SET deleted = 1 WHERE kind = ? AND slug = ? AND deleted = 0", (kind.value, slug)
            )
        return cur.rowcount > 0

    def add_download(self, kind: Kind, slug: str) -> bool:
        with self._write() as db:
            cur = db.execute(
                "UPDATE packages SET downloads = downloads + 1 WHERE kind = ? AND slug = ? AND deleted = 0",
                (kind.value, slug),
            )
        return cur.rowcount > 0

    def add_downloads(self, counts: Mapping[tuple[Kind, str], int]) -> None:
        with self._write() as db:
            db.executemany(
                "UPDATE packages SET downloads = downloads + ? WHERE kind = ? AND slug = ? AND deleted = 0",
                [(n, kind.value, slug) for (kind, slug), n in counts.items()],
            )

    def toggle_star(self, user: User, kind: Kind, slug: str) -> tuple[bool, int] | None:
        with self._write() as db:
            row = db.execute(
                "SELECT id FROM packages WHERE kind = ? AND slug = ? AND deleted = 0", (kind.value, slug)
            ).fetchone()
            if row is None:
                return None
            removed = db.execute(
                "DELETE FROM stars WHERE user_id = ? AND package_id = ?", (user.id, row[0])
            ).rowcount
            if not removed:
                db.execute("INSERT INTO stars (user_id, package_id) VALUES (?, ?)", (user.id, row[0]))
            (count,) = db.execute("SELECT count(*) FROM stars WHERE package_id = ?", (row[0],)).fetchone()
        return not removed, int(count)

    # blobs
    def put_blob(self, data: bytes) -> str:
        return self.blobs.put(data)

    def get_blob(self, sha256: str) -> bytes | None:
        return self.blobs.get(sha256)

    def blob_path(self, sha256: str) -> Path | None:
        return self.blobs.existing_path(sha256)

    def close(self) -> None:
        with self._pool_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._idle.clear()
