"""The built-in memory provider: SQLite with FTS5 in `.strawpot/memory/memory.db` (0600 in a 0700 folder).

Scopes: `project` (every role of this project; the default), `role` (only the role that remembered it) and
`global` (every project of this user: kept in `$STRAWPOT_HOME/memory/memory.db` when a global folder is given).
The same text in the same scope (and role) is stored once.
Several runs may use one database at once (WAL without an fsync per commit, a busy timeout). A `memory.jsonl` left by an older version is
imported once, ids and times kept, then renamed `memory.jsonl.migrated`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.memory import DEFAULT_MAX_RESULTS, DEFAULT_SCOPE, MemoryEntry, MemoryFailure, check_entry
from orchestrator.session import PRIVATE_FILE, private_folder
from strawpot.model.fs import file_lock

DB_NAME = "memory.db"
LEGACY_NAME = "memory.jsonl"
PROMPT_LIMIT = 20
BUSY_TIMEOUT = 10.0
_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries(id TEXT PRIMARY KEY, content TEXT NOT NULL, keywords TEXT NOT NULL,
       scope TEXT NOT NULL, role TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL)""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(entry_id UNINDEXED, content, keywords)",
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


def _busy(exc: sqlite3.DatabaseError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _fts_query(words: list[str]) -> str:
    """Any of the words, each quoted so nothing in it is FTS syntax."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


class SqliteMemory:
    def __init__(self, directory: Path, global_directory: Path | None = None, *,
                 busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.directory = directory
        self.busy_timeout = busy_timeout
        self.path = directory / DB_NAME
        self.global_path = global_directory / DB_NAME if global_directory is not None else None

    # -- storage --------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _db(self, path: Path) -> Iterator[sqlite3.Connection]:
        for each in (path.parent, path, *(path.with_name(path.name + end) for end in ("-wal", "-shm", "-journal"))):
            if each.is_symlink():  # its target would be chmod-ed and written as a database: not ours to touch
                raise MemoryFailure(f"{each} is a symlink; the memory store is only kept in a real folder and file "
                                    "(nothing was changed): replace the link with the folder or file it points to")
        private_folder(path.parent)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE))
        os.chmod(path, PRIVATE_FILE)
        try:
            conn = sqlite3.connect(path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise MemoryFailure(f"cannot open the memory database {path}: {exc}") from None
        try:
            self._prepare(conn)
            if path == self.path:
                self._migrate(conn)
            yield conn
        except sqlite3.DatabaseError as exc:
            if _busy(exc):
                raise MemoryFailure(f"the memory database {path} stayed locked by another session "
                                    f"for {self.busy_timeout:g}s") from None
            raise MemoryFailure(f"the memory database {path} is unreadable ({exc}); move it away to start "
                                "an empty one (`strawpot memory list` reads it)") from None
        finally:
            conn.close()

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the tables, safe against another session creating the same database at the same moment.

        The tables are created inside BEGIN IMMEDIATE, which waits for the write lock: each CREATE run on its
        own starts as a read of the schema and fails at once (SQLITE_BUSY, no waiting) when another session
        wrote the schema in between. Switching to WAL can fail the same way, so it is retried until the busy
        timeout.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        # A commit then waits for no fsync (a checkpoint does): a write lock held through an fsync on a slow disk
        # made another session's wait longer. A crash of strawpot loses nothing; a power cut may lose the
        # last entries, never the database.
        conn.execute("PRAGMA synchronous=NORMAL")
        have = conn.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('entries', 'entries_fts', 'meta')")
        if have.fetchone()[0] == 3:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                conn.execute(statement)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        legacy = self.directory / LEGACY_NAME
        if not legacy.is_file():
            return
        with file_lock(self.directory / ".lock"):
            if not legacy.is_file() or conn.execute("SELECT 1 FROM meta WHERE key='migrated'").fetchone():
                return
            rows = []
            for line in legacy.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(json.JSONDecodeError):
                    item = json.loads(line)
                    if isinstance(item, dict) and item.get("content"):
                        rows.append(item)
            conn.execute("BEGIN IMMEDIATE")
            for item in rows:
                keys = [str(k) for k in item.get("keywords") or []]
                self._insert(conn, str(item.get("id") or uuid.uuid4().hex), str(item["content"]), keys,
                             str(item.get("scope") or DEFAULT_SCOPE), "", float(item.get("created_at") or 0))
            conn.execute("INSERT INTO meta VALUES ('migrated', ?)", (str(len(rows)),))
            conn.execute("COMMIT")
            legacy.rename(legacy.with_name(LEGACY_NAME + ".migrated"))

    @staticmethod
    def _insert(conn: sqlite3.Connection, entry_id: str, content: str, keywords: list[str], scope: str, role: str,
                created_at: float) -> None:
        conn.execute("INSERT OR IGNORE INTO entries VALUES (?, ?, ?, ?, ?, ?)",
                     (entry_id, content, json.dumps(keywords), scope, role, created_at))
        conn.execute("INSERT INTO entries_fts VALUES (?, ?, ?)", (entry_id, content, " ".join(keywords)))

    def _stores(self, scope: str) -> list[tuple[Path, str]]:
        """(database, the scope read from it) for a read of `scope` ("" = every scope). The global database
        gives only `global` entries: what else it holds is the global scope's own project memory, which no
        other project sees. When both are one file (the project whose .strawpot is $STRAWPOT_HOME) it is read once."""
        own = [(self.path, scope)]
        if self.global_path is None or scope not in ("", "global"):
            return own
        if os.path.realpath(self.global_path) == os.path.realpath(self.path):
            return own
        return [*own, (self.global_path, "global")] if scope == "" else [(self.global_path, "global")]

    # -- the provider -----------------------------------------------------------------------------------

    def remember(self, content: str, keywords: list[str], scope: str, role: str = "") -> str:
        check_entry(content)
        scope = scope or DEFAULT_SCOPE
        role = role if scope == "role" else ""
        path = self.global_path if scope == "global" and self.global_path is not None else self.path
        with self._db(path) as conn:
            conn.execute("BEGIN IMMEDIATE")
            same = conn.execute("SELECT id, keywords FROM entries WHERE content = ? AND scope = ? AND role = ? "
                                "ORDER BY created_at LIMIT 1", (content, scope, role)).fetchone()
            if same is None:
                entry_id = uuid.uuid4().hex
                self._insert(conn, entry_id, content, list(keywords), scope, role, time.time())
            else:  # the same note again: stored once, with any keyword it did not have yet
                entry_id, known = str(same[0]), [str(k) for k in json.loads(same[1] or "[]")]
                merged = [*known, *(k for k in dict.fromkeys(keywords) if k not in known)]
                if merged != known:
                    conn.execute("UPDATE entries SET keywords = ? WHERE id = ?", (json.dumps(merged), entry_id))
                    conn.execute("DELETE FROM entries_fts WHERE entry_id = ?", (entry_id,))
                    conn.execute("INSERT INTO entries_fts VALUES (?, ?, ?)", (entry_id, content, " ".join(merged)))
            conn.execute("COMMIT")
        return entry_id

    def recall(self, query: str, keywords: list[str], scope: str, max_results: int,
               role: str = "") -> list[MemoryEntry]:
        """Entries in `scope` (any when empty) matching any word of the query or a keyword, best first."""
        words = _WORD.findall(query) + [k for k in keywords if k.strip()]
        limit = max_results if max_results > 0 else DEFAULT_MAX_RESULTS
        found: list[MemoryEntry] = []
        for path, read in self._stores(scope):
            with self._db(path) as conn:
                found += self._search(conn, words, read, role, limit)
        found.sort(key=lambda e: (-e.score, -e.created_at))
        return found[:limit]

    def _search(self, conn: sqlite3.Connection, words: list[str], scope: str, role: str,
                limit: int) -> list[MemoryEntry]:
        where, args = "WHERE 1", []
        if scope:
            where, args = "WHERE e.scope = ?", [scope]
        if role:
            where += " AND (e.scope != 'role' OR e.role = ?)"
            args.append(role)
        if not words:
            sql = f"SELECT e.*, 1.0 FROM entries e {where} ORDER BY e.created_at DESC LIMIT ?"
            rows = conn.execute(sql, [*args, limit]).fetchall()
        else:
            sql = (f"SELECT e.*, -bm25(entries_fts) FROM entries_fts JOIN entries e ON e.id = entries_fts.entry_id "
                   f"{where} AND entries_fts MATCH ? ORDER BY bm25(entries_fts), e.created_at DESC LIMIT ?")
            rows = conn.execute(sql, [*args, _fts_query(words), limit]).fetchall()
        return [_entry(row) for row in rows]

    def forget(self, entry_id: str) -> bool:
        gone = False
        for path, _ in self._stores(""):
            with self._db(path) as conn:
                conn.execute("BEGIN IMMEDIATE")
                gone = conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,)).rowcount > 0 or gone
                conn.execute("DELETE FROM entries_fts WHERE entry_id = ?", (entry_id,))
                conn.execute("COMMIT")
        return gone

    def entries(self) -> list[MemoryEntry]:
        return self.recall("", [], "", 1_000_000)

    def get(self, session_id: str, agent_id: str, role: str, task: str) -> str:
        """This role's own entries, those matching the task, then the newest others; "" when there are none."""
        chosen: dict[str, MemoryEntry] = {}
        for entry in (self.recall("", [], "role", PROMPT_LIMIT, role) + self.recall(task, [], "", PROMPT_LIMIT, role)
                      + self.recall("", [], "", PROMPT_LIMIT, role)):
            if entry.scope != "role" or entry.role == role:
                chosen.setdefault(entry.entry_id, entry)
        if not chosen:
            return ""
        lines = ["What was remembered in earlier sessions (strawpot memory; recall more through Denden):"]
        for entry in list(chosen.values())[:PROMPT_LIMIT]:
            keys = f" (keywords: {', '.join(entry.keywords)})" if entry.keywords else ""
            lines.append(f"- [{entry.scope}] {entry.content}{keys}")
        return "\n".join(lines)

    def dump(self, session_id: str, agent_id: str, role: str, task: str, result: str) -> None:
        """Nothing is learnt implicitly: the built-in memory holds only what was remembered on purpose."""
        return None


def _entry(row: tuple[Any, ...]) -> MemoryEntry:
    entry_id, content, keywords, scope, role, created_at, score = row
    keys = json.loads(keywords) if keywords else []
    return MemoryEntry(entry_id, content, tuple(str(k) for k in keys), scope, float(score), role, float(created_at))
