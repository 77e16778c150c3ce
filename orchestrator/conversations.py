"""Conversations: threads of headless sessions in one project, their queued tasks, and integrations' notifications.

One SQLite file in the data folder (`conversations.sqlite`, 0600) holds them, so every process on that folder
(`strawpot ui`, `strawpot chat`, `strawpot integrations`) sees the same threads, and claiming a conversation's next
task is one transaction: at most one task of a conversation runs at a time, whoever runs it. Ids are integers
(the chat adapters store them). Projects get integer ids here too, for the API's `project_id`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from orchestrator.run_record import State
from strawpot.model.errors import StrawpotError, UsageError

DB_FILE = "conversations.sqlite"
MAX_TASK_CHARS = 100_000  # a task longer than this is refused (an API answers 413)
QUEUED, RUNNING, ENDED = "queued", State.RUNNING.value, "ended"  # a task's phase: waiting, its run going, over

_SCHEMA = """
CREATE TABLE IF NOT EXISTS projects (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id), role TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL REFERENCES conversations(id), task TEXT NOT NULL,
    phase TEXT NOT NULL, run_id TEXT, submitted_at REAL NOT NULL, started_at REAL, ended_at REAL,
    state TEXT NOT NULL DEFAULT '', exit_code INTEGER, summary TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '', pid INTEGER);
CREATE INDEX IF NOT EXISTS tasks_by_conversation ON tasks(conversation_id, phase, id);
CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY, integration TEXT NOT NULL, chat_id TEXT NOT NULL DEFAULT '', message TEXT NOT NULL,
    created_at REAL NOT NULL, acked_at REAL);
"""


class ConversationError(StrawpotError):
    """The conversations file cannot be read or written, or a request names what is not there."""


class NoSuchConversation(ConversationError, UsageError):
    def __init__(self, conversation_id: int) -> None:
        super().__init__(f"no conversation {conversation_id}", hint="`strawpot chat --list` lists them")
        self.conversation_id = conversation_id


class EmptyTask(ConversationError, UsageError):
    """A task with nothing in it."""


class TaskTooLong(ConversationError, UsageError):
    def __init__(self, size: int) -> None:
        super().__init__(f"a task of {size:,} characters is longer than {MAX_TASK_CHARS:,}",
                         hint="put the long text in a file of the project and name the file in the task")


@dataclass(frozen=True)
class Conversation:
    id: int
    project: Path
    project_id: int
    role: str  # "" for the project's [orchestrator] role
    source: str  # who opened it: "chat", "ui", or an integration's name
    created_at: float


@dataclass(frozen=True)
class Task:
    """One task of a conversation: queued, running as run `run_id`, or ended (`state`, `summary`)."""

    id: int
    conversation_id: int
    task: str
    phase: str  # queued | running | ended
    run_id: str | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    state: str  # the run's state once known: running, succeeded, failed, …
    exit_code: int | None
    summary: str
    error: str
    pid: int | None


@dataclass(frozen=True)
class Notification:
    id: int
    integration: str
    chat_id: str
    message: str
    created_at: float
    acked_at: float | None


class ConversationStore:
    """The conversations of one data folder."""

    def __init__(self, data: Path) -> None:
        self.path = data / DB_FILE
        try:
            data.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConversationError(f"cannot create {self.path}: {exc.strerror or exc}") from None
        with self._db() as db:
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except sqlite3.Error as exc:
            raise ConversationError(f"cannot open {self.path}: {exc}") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            db.row_factory = sqlite3.Row
            yield db
        except sqlite3.DatabaseError as exc:
            raise ConversationError(f"{self.path} is unreadable: {exc}",
                                    hint="move it aside; strawpot starts a new one") from None
        finally:
            db.close()

    # -- projects and conversations ---------------------------------------------------------------------------

    def project_id(self, project: Path) -> int:
        """The integer id of `project` (an absolute folder), given on first use."""
        path = str(project.resolve())
        with self._db() as db:
            db.execute("INSERT OR IGNORE INTO projects(path) VALUES (?)", (path,))
            return int(db.execute("SELECT id FROM projects WHERE path = ?", (path,)).fetchone()[0])

    def project_path(self, project_id: int) -> Path | None:
        with self._db() as db:
            row = db.execute("SELECT path FROM projects WHERE id = ?", (project_id,)).fetchone()
        return Path(row[0]) if row else None

    def create(self, project: Path, *, role: str = "", source: str = "") -> Conversation:
        pid = self.project_id(project)
        with self._db() as db:
            cur = db.execute("INSERT INTO conversations(project_id, role, source, created_at) VALUES (?, ?, ?, ?)",
                             (pid, role, source, time.time()))
            assert cur.lastrowid is not None
            return self.get(int(cur.lastrowid), db)

    def get(self, conversation_id: int, db: sqlite3.Connection | None = None) -> Conversation:
        """The conversation `conversation_id`; NoSuchConversation when there is none."""
        if db is None:
            with self._db() as fresh:
                return self.get(conversation_id, fresh)
        row = db.execute("SELECT c.*, p.path FROM conversations c JOIN projects p ON p.id = c.project_id "
                         "WHERE c.id = ?", (conversation_id,)).fetchone()
        if row is None:
            raise NoSuchConversation(conversation_id)
        return Conversation(row["id"], Path(row["path"]), row["project_id"], row["role"], row["source"],
                            row["created_at"])

    def recent(self, project: Path | None = None, limit: int = 100) -> list[Conversation]:
        """Conversations, the newest first (of `project` only, when given)."""
        query = "SELECT c.*, p.path FROM conversations c JOIN projects p ON p.id = c.project_id"
        args: tuple[object, ...] = ()
        if project is not None:
            query, args = query + " WHERE p.path = ?", (str(project.resolve()),)
        with self._db() as db:
            rows = db.execute(query + " ORDER BY c.id DESC LIMIT ?", (*args, limit)).fetchall()
        return [Conversation(r["id"], Path(r["path"]), r["project_id"], r["role"], r["source"], r["created_at"])
                for r in rows]

    # -- tasks ------------------------------------------------------------------------------------------------

    def submit(self, conversation_id: int, task: str) -> Task:
        """Queue `task` at the end of the conversation's queue."""
        text = task.strip()
        if not text:
            raise EmptyTask("an empty task", hint="say what the agents should do")
        if len(text) > MAX_TASK_CHARS:
            raise TaskTooLong(len(text))
        with self._db() as db:
            self.get(conversation_id, db)
            cur = db.execute("INSERT INTO tasks(conversation_id, task, phase, submitted_at) VALUES (?, ?, ?, ?)",
                             (conversation_id, text, QUEUED, time.time()))
            assert cur.lastrowid is not None
            return self.task(int(cur.lastrowid), db)

    def task(self, task_id: int, db: sqlite3.Connection | None = None) -> Task:
        if db is None:
            with self._db() as fresh:
                return self.task(task_id, fresh)
        row = db.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise ConversationError(f"no task {task_id}")
        return _task(row)

    def tasks(self, conversation_id: int) -> list[Task]:
        """The conversation's tasks, oldest first."""
        with self._db() as db:
            self.get(conversation_id, db)
            return [_task(r) for r in db.execute("SELECT * FROM tasks WHERE conversation_id = ? ORDER BY id",
                                                 (conversation_id,))]

    def running(self) -> list[Task]:
        """Every task whose run has not been seen to end, in every conversation."""
        with self._db() as db:
            return [_task(r) for r in db.execute("SELECT * FROM tasks WHERE phase = ? ORDER BY id", (RUNNING,))]

    def with_queue(self) -> list[int]:
        """The conversations that have a queued task and none running."""
        with self._db() as db:
            rows = db.execute("SELECT DISTINCT conversation_id FROM tasks t WHERE phase = ? AND NOT EXISTS "
                              "(SELECT 1 FROM tasks r WHERE r.conversation_id = t.conversation_id AND r.phase = ?)",
                              (QUEUED, RUNNING)).fetchall()
        return [int(r[0]) for r in rows]

    def claim(self, conversation_id: int, run_id: str) -> Task | None:
        """The conversation's oldest queued task, now running as `run_id`; None when one runs already or none
        waits. One transaction, so two processes never start two tasks of one conversation."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                busy = db.execute("SELECT 1 FROM tasks WHERE conversation_id = ? AND phase = ?",
                                  (conversation_id, RUNNING)).fetchone()
                row = None if busy else db.execute(
                    "SELECT id FROM tasks WHERE conversation_id = ? AND phase = ? ORDER BY id LIMIT 1",
                    (conversation_id, QUEUED)).fetchone()
                if row is not None:
                    db.execute("UPDATE tasks SET phase = ?, run_id = ?, started_at = ?, state = ? WHERE id = ?",
                               (RUNNING, run_id, time.time(), State.RUNNING.value, row[0]))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return self.task(int(row[0]), db) if row is not None else None

    def started(self, task_id: int, pid: int) -> None:
        with self._db() as db:
            db.execute("UPDATE tasks SET pid = ? WHERE id = ?", (pid, task_id))

    def ended(self, task_id: int, state: str, exit_code: int | None, summary: str, error: str) -> None:
        """Task `task_id`'s run ended; a second report of the same end changes nothing."""
        with self._db() as db:
            db.execute("UPDATE tasks SET phase = ?, state = ?, exit_code = ?, summary = ?, error = ?, ended_at = ?, "
                       "pid = NULL WHERE id = ? AND phase = ?",
                       (ENDED, state, exit_code, summary, error, time.time(), task_id, RUNNING))

    def task_of_run(self, run_id: str) -> Task | None:
        with self._db() as db:
            row = db.execute("SELECT * FROM tasks WHERE run_id = ?", (run_id,)).fetchone()
        return _task(row) if row else None

    # -- notifications ----------------------------------------------------------------------------------------

    def notify(self, integration: str, chat_id: str, message: str) -> int:
        with self._db() as db:
            cur = db.execute("INSERT INTO notifications(integration, chat_id, message, created_at) VALUES (?, ?, ?, ?)",
                             (integration, chat_id, message, time.time()))
            assert cur.lastrowid is not None
            return int(cur.lastrowid)

    def pending(self, integration: str, limit: int = 100) -> list[Notification]:
        """The integration's notifications not acknowledged yet, oldest first."""
        with self._db() as db:
            rows = db.execute("SELECT * FROM notifications WHERE integration = ? AND acked_at IS NULL ORDER BY id "
                              "LIMIT ?", (integration, limit)).fetchall()
        return [Notification(r["id"], r["integration"], r["chat_id"], r["message"], r["created_at"], r["acked_at"])
                for r in rows]

    def ack(self, integration: str, notification_id: int) -> bool:
        """Mark a notification delivered; False when the integration has no such notification. Acking twice is
        fine (True again)."""
        with self._db() as db:
            db.execute("UPDATE notifications SET acked_at = ? WHERE id = ? AND integration = ? AND acked_at IS NULL",
                       (time.time(), notification_id, integration))
            row = db.execute("SELECT 1 FROM notifications WHERE id = ? AND integration = ?",
                             (notification_id, integration)).fetchone()
        return row is not None


def _task(row: sqlite3.Row) -> Task:
    return Task(row["id"], row["conversation_id"], row["task"], row["phase"], row["run_id"], row["submitted_at"],
                row["started_at"], row["ended_at"], row["state"], row["exit_code"], row["summary"], row["error"],
                row["pid"])
