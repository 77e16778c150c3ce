"""Open the storage a command line names: embedded SQLite + a blob folder, or PostgreSQL and/or an S3 bucket."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from registry_server.storage.sql import SQLStorage


@dataclass(frozen=True)
class StorageSpec:
    """Where metadata and blobs live: `database` None means `<data>/registry.sqlite3`, `blobs` None `<data>/blobs`."""

    data_dir: Path
    database: str | None = None
    blobs: str | None = None
    s3_endpoint: str | None = None

    def describe(self) -> str:
        meta = self.database and f"PostgreSQL at {_where(self.database)}" or f"SQLite in {self.data_dir}"
        return f"{meta}, blobs in {self.blobs or self.data_dir / 'blobs'}"


def _where(url: str) -> str:
    from registry_server.storage.postgres import where

    return where(url)


def open_storage(spec: StorageSpec, *, migrate: bool = False) -> SQLStorage:
    """Open (and with `migrate`, upgrade) the storage; raises `schema.SchemaMismatch`, `postgres.ConnectFailed`,
    `s3.BucketMissing`, `ValueError` (a malformed address) or OSError/sqlite3.Error."""
    from registry_server.storage.blobs import Blobs, DirectoryBlobs
    from registry_server.storage.sqlite import SQLiteStorage

    blobs: Blobs
    if spec.blobs is None:
        blobs = DirectoryBlobs(spec.data_dir / "blobs")
    else:
        from registry_server.storage.s3 import S3Blobs

        blobs = S3Blobs(spec.blobs, endpoint=spec.s3_endpoint, create=migrate)
    if spec.database is None:
        return SQLiteStorage(spec.data_dir, blobs=blobs, migrate=migrate)
    if not spec.database.startswith(("postgresql://", "postgres://")):
        raise ValueError(f"--database: {spec.database.split('@')[-1]!r} is not a postgresql://USER@HOST/DB address")
    from registry_server.storage.postgres import PostgresStorage

    return PostgresStorage(spec.database, blobs, migrate=migrate)
