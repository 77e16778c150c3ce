"""Publisher keys and the transparency log in SQL (SQLite and PostgreSQL), mixed into `SQLStorage`.

Appends take the next index from `log_size` with one `UPDATE … RETURNING`: on PostgreSQL that row stays locked
until the appending transaction ends, so concurrent publishes of several workers get dense, ordered indexes and a
rolled-back publish leaves no gap.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from registry_server.storage.base import KeyConflict, KeyRecord, User
from registry_server.storage.memory import now_ms
from strawpot.model.log_entries import key_entry, leaf_hex

if TYPE_CHECKING:
    from registry_server.storage.sql import Tx

_KEY = ("SELECT k.key_id, u.handle, k.public_key, k.created_at, k.revoked_at, k.log_index FROM publisher_keys k"
        " JOIN users u ON u.id = k.user_id")


def _key(row: tuple[Any, ...]) -> KeyRecord:
    return KeyRecord(row[0], row[1], row[2], int(row[3]), None if row[4] is None else int(row[4]),
                     None if row[5] is None else int(row[5]))


def append(db: Tx, entry: str) -> int:
    """Add `entry` at the end of the log inside `db`'s transaction; its index."""
    row = db.one("UPDATE log_size SET size = size + 1 WHERE id = 1 RETURNING size")
    assert row is not None
    index = int(row[0]) - 1
    db.run("INSERT INTO log_entries (idx, entry, leaf_hash, created_at) VALUES (?, ?, ?, ?)",
           index, entry, leaf_hex(entry), now_ms())
    return index


class ProvenanceSQL:
    """Keys and log over `_read`/`_write` transactions."""

    def _read(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def add_key(self, user: User, key_id: str, public_key: str) -> KeyRecord:
        stamp = now_ms()
        with self._write() as db:
            if db.one("SELECT 1 FROM publisher_keys WHERE key_id = ?", key_id) is not None:
                raise KeyConflict(f"the key {key_id} is registered already (a key is never registered twice)")
            index = append(db, key_entry("add", user.handle, key_id, public_key, stamp))
            db.run("INSERT INTO publisher_keys (key_id, user_id, public_key, created_at, log_index)"
                   " VALUES (?, ?, ?, ?, ?)", key_id, user.id, public_key, stamp, index)
            db.run("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")
        return KeyRecord(key_id, user.handle, public_key, stamp, None, index)

    def keys_of(self, handle: str) -> list[KeyRecord]:
        with self._read() as db:
            return [_key(r) for r in db.all(f"{_KEY} WHERE u.handle = ? ORDER BY k.created_at, k.key_id", handle)]

    def key(self, key_id: str) -> KeyRecord | None:
        with self._read() as db:
            row = db.one(f"{_KEY} WHERE k.key_id = ?", key_id)
        return None if row is None else _key(row)

    def revoke_key(self, user: User, key_id: str) -> KeyRecord | None:
        stamp = now_ms()
        with self._write() as db:
            row = db.one("SELECT public_key FROM publisher_keys WHERE key_id = ? AND user_id = ? AND revoked_at IS NULL",
                         key_id, user.id)
            if row is None:
                return None
            append(db, key_entry("revoke", user.handle, key_id, str(row[0]), stamp))
            db.run("UPDATE publisher_keys SET revoked_at = ? WHERE key_id = ?", stamp, key_id)
            db.run("UPDATE registry_changes SET seq = seq + 1 WHERE id = 1")
        return self.key(key_id)

    def log_size(self) -> int:
        with self._read() as db:
            row = db.one("SELECT size FROM log_size WHERE id = 1")
        return 0 if row is None else int(row[0])

    def log_entries(self, start: int, end: int) -> list[str]:
        with self._read() as db:
            return [str(r[0]) for r in db.all("SELECT entry FROM log_entries WHERE idx >= ? AND idx < ? ORDER BY idx",
                                              start, end)]

    def log_leaves(self, size: int) -> list[bytes]:
        with self._read() as db:
            rows = db.all("SELECT leaf_hash FROM log_entries WHERE idx < ? ORDER BY idx", size)
        return [bytes.fromhex(r[0]) for r in rows]

    def registry_key(self, make: Callable[[], str]) -> str:
        row = None
        with self._read() as db:
            row = db.one("SELECT private_key FROM registry_key WHERE id = 1")
        if row is None:
            with self._write() as db:
                db.run("INSERT INTO registry_key (id, private_key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", make())
                row = db.one("SELECT private_key FROM registry_key WHERE id = 1")
        assert row is not None
        return str(row[0])
