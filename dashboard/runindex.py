"""The runs list's rows: one summary per run folder, re-read only when its session.json changes (mtime and size).

The run folder stays the one source of truth: this is a cache of what was read from it, never written anywhere.
A running run's open askUser questions are not in session.json: they are counted afresh (one listing of its
`asks/` folder) each time a page shows the run.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.orphans import pid_alive
from orchestrator.questions import open_count
from orchestrator.run_record import FINAL_STATES, RUN_ID_RE, SESSION_FILE, RunRecordBroken, State, find_run

PAGE_SIZE = 50


@dataclass(frozen=True)
class LiveAgent:
    """An agent of a running run that has not ended: what the home page's activity feed shows of it."""

    agent_id: str
    role: str
    agent: str  # its runtime: the agent package that plays the role
    state: str
    started_at: float | None
    workspace: str  # where its agent.log is ("" before it has one)


@dataclass(frozen=True)
class RunRow:
    """What the runs list shows of one run; `readable` False for a corrupt or half-written session.json."""

    run_id: str
    role: str = ""
    state: str = ""
    started_at: float = 0.0
    agents: int = 0
    readable: bool = True
    open_questions: int = 0  # askUser questions waiting for an answer (counted for a running run only)
    task: str = ""
    summary: str = ""  # the main agent's final answer, once the run ended
    exit_code: int | None = None
    ended_at: float | None = None
    runtime: str = ""  # the main agent's package
    live: tuple[LiveAgent, ...] = ()  # a running run's agents that have not ended
    owner_pid: int | None = None
    owner_gone: bool = False  # a running run whose strawpot process is no more (killed): nothing runs it

    @property
    def going(self) -> bool:
        """Whether the run still runs: recorded running, and its owner (when recorded) is alive."""
        return self.state == State.RUNNING and not self.owner_gone


def _summary(sessions_root: Path, run_id: str) -> RunRow:
    try:
        record = find_run(sessions_root, run_id)
    except RunRecordBroken:
        record = None
    if record is None:  # broken, or gone since the folder was listed
        return RunRow(run_id, readable=False)
    live = tuple(LiveAgent(a.agent_id, a.role, a.agent, str(a.state), a.started_at, a.workspace)
                 for a in record.agents if a.state not in FINAL_STATES) if record.state == State.RUNNING else ()
    return RunRow(run_id, record.role, str(record.state), record.started_at, len(record.agents),
                  task=record.task, summary=record.summary, exit_code=record.exit_code, ended_at=record.ended_at,
                  runtime=record.root.agent if record.root else "", live=live, owner_pid=record.owner_pid)


def _order(started_at: float) -> str:
    """A sort key in the form a run id carries its (UTC) start time, for folders named otherwise."""
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(started_at))


class RunIndex:
    """Summaries of the runs under each sessions folder, keyed by session.json's (mtime_ns, size, inode).

    A run id names its start time (`run_YYYYMMDD_HHMMSS_…`), so a page of the newest runs is found from the
    folder names alone and only its own rows are read; a folder named otherwise is read to learn its start.
    """

    def __init__(self) -> None:
        # sessions folder -> run id -> (stamp, row); plain strings, as pathlib costs more than the stat itself
        self._cache: dict[str, dict[str, tuple[tuple[int, int, int], RunRow]]] = {}
        self._lock = threading.Lock()

    def _row(self, known: dict[str, tuple[tuple[int, int, int], RunRow]], folder: str, name: str) -> RunRow | None:
        path = f"{folder}/{name}/{SESSION_FILE}"
        try:
            st = os.stat(path)
        except OSError:  # not a run folder, or one whose session.json is not written yet
            return None
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)  # session.json is replaced, never edited
        cached = known.get(name)
        if cached is None or cached[0] != stamp:
            cached = (stamp, _summary(Path(folder), name))
            with self._lock:
                known[name] = cached
        return cached[1]

    def _names(self, folder: str) -> tuple[dict[str, tuple[tuple[int, int, int], RunRow]], list[str]]:
        """The folder's cache and its run folders' names, newest first."""
        try:
            names = [e.name for e in os.scandir(folder) if not e.name.startswith(".")]
        except OSError:
            names = []
        with self._lock:
            known = self._cache.setdefault(folder, {})
            for gone in set(known) - set(names):  # pruned runs
                del known[gone]
        keyed: list[tuple[str, str]] = []
        for name in names:
            if RUN_ID_RE.fullmatch(name):
                keyed.append((name[4:19], name))
            elif (row := self._row(known, folder, name)) is not None:
                keyed.append((_order(row.started_at), name))
        keyed.sort(reverse=True)
        return known, [name for _, name in keyed]

    def page(self, sessions_root: Path, page: int, size: int = PAGE_SIZE) -> tuple[list[RunRow], int]:
        """The `page`-th (from 0) `size` runs, newest first, and the number of run folders in all."""
        folder = str(sessions_root)
        known, names = self._names(folder)
        shown = [row for name in names[page * size:(page + 1) * size]
                 if (row := self._row(known, folder, name)) is not None]
        return [_asking(sessions_root, row) for row in shown], len(names)

    def running(self, sessions_root: Path) -> list[RunRow]:
        """Every run of the folder that is running, newest first (each row re-read only when it changed)."""
        folder = str(sessions_root)
        known, names = self._names(folder)
        return [_asking(sessions_root, row) for name in names
                if (row := self._row(known, folder, name)) is not None and row.state == State.RUNNING]


def _asking(sessions_root: Path, row: RunRow) -> RunRow:
    """A running run's `row` with its open questions counted and whether its owner is gone, both looked at
    afresh (neither changes session.json); only a running run can still take an answer (an ended one's
    questions were settled or are moot)."""
    if row.state != State.RUNNING:
        return row
    return replace(row, open_questions=open_count(sessions_root / row.run_id),
                   owner_gone=row.owner_pid is not None and not pid_alive(row.owner_pid))
