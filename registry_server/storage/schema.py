"""The one database schema of the registry (SQLite and PostgreSQL) and its versioned migrations.

Each migration runs in one transaction together with the bump of `schema_version`, so a migration
interrupted halfway leaves the previous version in place and a re-run completes it. `{id}` in a
statement is the dialect's auto-numbered primary key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from registry_server.storage.base import StorageError


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "users, tokens, packages, versions, stars", (
        """CREATE TABLE IF NOT EXISTS users (
            id {id}, handle TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL, email TEXT NOT NULL DEFAULT '',
            role TEXT NOT NULL DEFAULT 'user', banned INTEGER NOT NULL DEFAULT 0, ban_reason TEXT,
            created_at BIGINT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS tokens (
            hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), created_at BIGINT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS packages (
            id {id}, kind TEXT NOT NULL, slug TEXT NOT NULL, owner_id INTEGER NOT NULL REFERENCES users(id),
            display_name TEXT NOT NULL, summary TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '',
            downloads BIGINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0, UNIQUE (kind, slug))""",
        """CREATE TABLE IF NOT EXISTS versions (
            id {id}, package_id INTEGER NOT NULL REFERENCES packages(id), version TEXT NOT NULL,
            changelog TEXT NOT NULL, meta TEXT NOT NULL, archive_sha256 TEXT NOT NULL, archive_size BIGINT NOT NULL,
            yanked INTEGER NOT NULL DEFAULT 0, created_at BIGINT NOT NULL, UNIQUE (package_id, version))""",
        """CREATE TABLE IF NOT EXISTS stars (
            user_id INTEGER NOT NULL REFERENCES users(id), package_id INTEGER NOT NULL REFERENCES packages(id),
            PRIMARY KEY (user_id, package_id))""",
    )),
    Migration(2, "a change counter every worker compares before it trusts its caches", (
        "CREATE TABLE IF NOT EXISTS registry_changes (id INTEGER PRIMARY KEY CHECK (id = 1), seq BIGINT NOT NULL)",
        "INSERT INTO registry_changes (id, seq) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    )),
    Migration(3, "a mirror's cache of its upstream (tables of its own) and the names reserved for local packages", (
        """CREATE TABLE IF NOT EXISTS upstream_packages (
            kind TEXT NOT NULL, slug TEXT NOT NULL, body TEXT NOT NULL, fetched_at BIGINT NOT NULL,
            PRIMARY KEY (kind, slug))""",
        """CREATE TABLE IF NOT EXISTS upstream_archives (
            sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, slug TEXT NOT NULL, version TEXT NOT NULL,
            size BIGINT NOT NULL, files TEXT NOT NULL, used_at BIGINT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS reserved_names (
            kind TEXT NOT NULL, slug TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (kind, slug))""",
    )),
    Migration(4, "security advisories (`strawpot registry advisory add`, `GET /api/v1/advisories`)", (
        """CREATE TABLE IF NOT EXISTS advisories (
            id {id}, kind TEXT NOT NULL, slug TEXT NOT NULL, affected TEXT NOT NULL, severity TEXT NOT NULL,
            summary TEXT NOT NULL, created_at BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS advisories_package ON advisories (kind, slug)",
    )),
    Migration(5, "publisher keys, signed statements and the transparency log", (
        """CREATE TABLE IF NOT EXISTS publisher_keys (
            key_id TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), public_key TEXT NOT NULL,
            created_at BIGINT NOT NULL, revoked_at BIGINT, log_index BIGINT)""",
        "ALTER TABLE versions ADD COLUMN statement TEXT",
        "ALTER TABLE versions ADD COLUMN signature TEXT",
        "ALTER TABLE versions ADD COLUMN key_id TEXT",
        "ALTER TABLE versions ADD COLUMN log_index BIGINT",
        """CREATE TABLE IF NOT EXISTS log_entries (
            idx BIGINT PRIMARY KEY, entry TEXT NOT NULL, leaf_hash TEXT NOT NULL, created_at BIGINT NOT NULL)""",
        "CREATE TABLE IF NOT EXISTS log_size (id INTEGER PRIMARY KEY CHECK (id = 1), size BIGINT NOT NULL)",
        "INSERT INTO log_size (id, size) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        "CREATE TABLE IF NOT EXISTS registry_key (id INTEGER PRIMARY KEY CHECK (id = 1), private_key TEXT NOT NULL)",
    )),
)
LATEST = MIGRATIONS[-1].version


class SchemaMismatch(StorageError):
    """The database's schema is older or newer than this server's."""


class Dialect(Protocol):
    """What the migration runner needs of a database: run SQL in one transaction, read the version."""

    name: str
    id_column: str

    def stored_version(self) -> int: ...
    def run_in_transaction(self, statements: Sequence[str], version: int) -> None: ...


def pending(stored: int, migrations: Sequence[Migration] = MIGRATIONS) -> list[Migration]:
    return [m for m in migrations if m.version > stored]


def migrate(
    db: Dialect, migrations: Sequence[Migration] = MIGRATIONS, *, on_step: Callable[[Migration], Any] | None = None
) -> list[Migration]:
    """Apply every pending migration, each in its own transaction; returns those applied."""
    stored = db.stored_version()
    newest = migrations[-1].version
    if stored > newest:
        raise _newer(db, stored, newest)
    done = []
    for step in pending(stored, migrations):
        db.run_in_transaction([s.replace("{id}", db.id_column) for s in step.statements], step.version)
        done.append(step)
        if on_step is not None:
            on_step(step)
    return done


def check(db: Dialect, *, create_if_empty: bool) -> None:
    """Refuse a schema older or newer than LATEST; an empty database is created when allowed."""
    stored = db.stored_version()
    if stored == 0 and create_if_empty:
        migrate(db)
        return
    if stored < LATEST:
        raise SchemaMismatch(
            f"the {db.name} database has schema version {stored}, older than this registry's {LATEST}: "
            "run `strawpot registry migrate` with the same --data/--database first"
        )
    if stored > LATEST:
        raise _newer(db, stored, LATEST)


def _newer(db: Dialect, stored: int, known: int) -> SchemaMismatch:
    return SchemaMismatch(
        f"the {db.name} database has schema version {stored}, newer than this registry knows ({known}): "
        "upgrade strawpot"
    )
