"""The advisories table of `SQLStorage` (SQLite and PostgreSQL alike), kept apart from the package rows."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from registry_server.storage.base import Advisory
from strawpot.model.kinds import Kind

if TYPE_CHECKING:
    from registry_server.storage.sql import Tx

_COLUMNS = "id, kind, slug, affected, severity, summary, created_at"


def _advisory(row: tuple[Any, ...]) -> Advisory:
    return Advisory(Kind(row[1]), str(row[2]), str(row[3]), str(row[4]), str(row[5]), int(row[6]), int(row[0]))


class SQLAdvisories:
    """`add_advisory` and `advisories` over the connections of the storage it is mixed into."""

    def _read(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def add_advisory(self, advisory: Advisory) -> Advisory:
        from registry_server.storage.memory import now_ms

        stamp = now_ms()
        with self._write() as db:
            row = db.one(
                "INSERT INTO advisories (kind, slug, affected, severity, summary, created_at) VALUES (?, ?, ?, ?, ?, ?)"
                " RETURNING id", advisory.kind.value, advisory.slug, advisory.affected, advisory.severity,
                advisory.summary, stamp,
            )
        assert row is not None
        return Advisory(advisory.kind, advisory.slug, advisory.affected, advisory.severity, advisory.summary, stamp,
                        int(row[0]))

    def advisories(self, kind: Kind | None = None, slug: str | None = None) -> list[Advisory]:
        where, args = [], []
        if kind is not None:
            where.append("kind = ?")
            args.append(kind.value)
        if slug is not None:
            where.append("slug = ?")
            args.append(slug)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with self._read() as db:
            rows = db.all(f"SELECT {_COLUMNS} FROM advisories{clause} ORDER BY id", *args)
        return [_advisory(r) for r in rows]
