"""The reference registry: StrawHub API v1 plus our extensions, over a pluggable `Storage`."""

from __future__ import annotations

from registry_server.app import create_app
from registry_server.auth import create_token
from registry_server.storage import MemoryStorage, SQLiteStorage, Storage

__all__ = ["MemoryStorage", "SQLiteStorage", "Storage", "create_app", "create_token"]
