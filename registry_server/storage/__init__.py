"""Registry storage: the `Storage` protocol; SQLite, PostgreSQL (`postgres.py`) and in-memory implementations."""

from __future__ import annotations

from registry_server.storage.base import (
    FileEntry,
    NewVersion,
    NotOwner,
    PackageDeleted,
    PackageRecord,
    Published,
    Storage,
    StorageError,
    User,
    VersionConflict,
    VersionRecord,
)
from registry_server.storage.memory import MemoryStorage
from registry_server.storage.sqlite import SQLiteStorage

__all__ = [
    "FileEntry",
    "MemoryStorage",
    "NewVersion",
    "NotOwner",
    "PackageDeleted",
    "PackageRecord",
    "Published",
    "SQLiteStorage",
    "Storage",
    "StorageError",
    "User",
    "VersionConflict",
    "VersionRecord",
]
