"""The embedded `Storage`: SQLite (WAL) for metadata, a content-addressed directory for blobs."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from registry_server.storage import schema
from registry_server.storage.blobs import Blobs, DirectoryBlobs
from registry_server.storage.sql import SQLStorage


class _Tx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def one(self, sql: str, *args: Any) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(sql, args).fetchone()
        return row

    def all(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, args).fetchall()

    def run(self, sql: str, *args: Any) -> int:
        return self.conn.execute(sql, args).rowcount

    def many(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        self.conn.executemany(sql, rows)


class SQLiteStorage(SQLStorage):
    """`<data>/registry.sqlite3` (WAL) and `<data>/blobs/`.

    Connections are pooled, not per thread: a request handled on a fresh worker thread (or a timer
    thread) borrows an open connection instead of paying the connect and PRAGMAs again. An empty
    database is created on first use; one at another schema version is refused (`schema.SchemaMismatch`)
    unless `migrate=True`, which upgrades it (`migrations`: the steps, a test's argument).
    """

    name = "SQLite"
    id_column = "INTEGER PRIMARY KEY"

    def __init__(self, data_dir: Path, *, blobs: Blobs | None = None, migrate: bool = False,
                 migrations: Sequence[schema.Migration] = schema.MIGRATIONS) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.db_path = self.data_dir / "registry.sqlite3"
        self.blobs = blobs if blobs is not None else DirectoryBlobs(self.data_dir / "blobs")
        self._idle: list[sqlite3.Connection] = []
        self._all: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        try:
            if migrate:
                schema.migrate(self, migrations)
            else:
                schema.check(self, create_if_empty=True)
        except BaseException:
            self.close()
            raise

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
    def _read(self) -> Iterator[_Tx]:
        with self._conn() as conn:
            yield _Tx(conn)

    @contextmanager
    def _write(self) -> Iterator[_Tx]:
        """BEGIN IMMEDIATE, so writers (of every process) queue instead of deadlocking."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Tx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # schema.Dialect
    def stored_version(self) -> int:
        with self._conn() as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        return int(version)

    def run_in_transaction(self, statements: Sequence[str], version: int) -> None:
        with self._write() as db:
            for statement in statements:
                db.run(statement)
            db.run(f"PRAGMA user_version = {int(version)}")  # transactional in SQLite: rolled back with the rest

    def close(self) -> None:
        with self._pool_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._idle.clear()
