"""Open the storage a command line names: embedded SQLite + a blob folder, or PostgreSQL and/or an S3 bucket."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from registry_server.storage.sql import SQLStorage
from strawpot.model.errors import MissingToolError

# Each backend's extra (pyproject.toml's optional dependencies), the flag that asks for it, the modules it brings.
EXTRAS = {"postgres": ("--database", ("psycopg", "psycopg_pool")), "s3": ("--blobs", ("boto3", "botocore"))}


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
    """Open (and with `migrate`, upgrade) the storage; raises `schema.SchemaMismatch`, `base.ConnectFailed`,
    `s3.BucketMissing`, `ValueError` (a malformed address), `MissingToolError` (a backend's extra is not
    installed) or OSError/sqlite3.Error."""
    from registry_server.storage.blobs import Blobs, DirectoryBlobs
    from registry_server.storage.sqlite import SQLiteStorage

    if spec.database is not None and not spec.database.startswith(("postgresql://", "postgres://")):
        raise ValueError(f"--database: {spec.database.split('@')[-1]!r} is not a postgresql://USER@HOST/DB address")
    require_extras(spec)
    blobs: Blobs
    if spec.blobs is None:
        blobs = DirectoryBlobs(spec.data_dir / "blobs")
    else:
        from registry_server.storage.s3 import S3Blobs

        blobs = S3Blobs(spec.blobs, endpoint=spec.s3_endpoint, create=migrate)
    if spec.database is None:
        return SQLiteStorage(spec.data_dir, blobs=blobs, migrate=migrate)
    from registry_server.storage.postgres import PostgresStorage

    return PostgresStorage(spec.database, blobs, migrate=migrate)


def require_extras(spec: StorageSpec) -> None:
    """Raise one line naming the extras the backends `spec` asks for need and lack, and how to install them."""
    asked = {"postgres": spec.database is not None, "s3": spec.blobs is not None}
    lacking = {extra: [module for module in modules if not _importable(module)]
               for extra, (_flag, modules) in EXTRAS.items() if asked[extra]}
    lacking = {extra: modules for extra, modules in lacking.items() if modules}
    if lacking:
        flags = ", ".join(EXTRAS[extra][0] for extra in lacking)
        modules = ", ".join(module for missing in lacking.values() for module in missing)
        extras = ",".join(lacking)
        raise MissingToolError(f"{flags}: this strawpot was installed without the strawpot[{extras}] extra (no "
                               f"module {modules}); add it: pip install 'strawpot[{extras}]'")


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
