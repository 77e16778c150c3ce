"""A run's record on disk: `session.json` (agents, parents, roles, states, pids) and `trace.jsonl`.

Private to the user: `.strawpot/sessions/` and each run folder are 0700, the files the orchestrator writes 0600.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.run_record import (
    FINAL_STATES,
    MAX_RECORD_BYTES,
    PRIVATE_DIR,
    PRIVATE_FILE,
    RUN_ID_RE,
    SESSION_FILE,
    STOPPED_EXIT_CODE,
    AgentRecord,
    RunRecord,
    State,
    bounded_summary,
    read_run,
    write_run,
)
from strawpot.model.agent_files import open_regular

__all__ = ["FINAL_STATES", "PRIVATE_DIR", "PRIVATE_FILE", "RUN_ID_RE", "SESSION_FILE", "STOPPED_EXIT_CODE",
           "AgentRecord", "Session", "State", "command_exit_code", "exit_code_for", "new_agent_id", "new_run_id",
           "private_folder", "read_trace"]

STAGED, RUNNING, SUCCEEDED, FAILED = State.STAGED, State.RUNNING, State.SUCCEEDED, State.FAILED
TIMED_OUT, CANCELLED, PAUSED, INTERRUPTED = State.TIMED_OUT, State.CANCELLED, State.PAUSED, State.INTERRUPTED
TRACE_FILE = "trace.jsonl"


def exit_code_for(state: str, code: int | None) -> int | None:
    """The one exit code recorded, shown and returned for a run or agent that ended in `state` with `code`.

    130 when `strawpot cancel` or Ctrl-C stopped it, whatever signal did; 128+N for a process a signal N ended
    otherwise (as a shell reports it: 137 for SIGKILL); else the process's own code (None: it never exited).
    """
    if state in (CANCELLED, INTERRUPTED):
        return STOPPED_EXIT_CODE
    return 128 - code if code is not None and code < 0 else code


def command_exit_code(state: str, code: int | None) -> int:
    """What `start`, `resume` and `attach` exit with for a run that ended in `state` with the orchestrator's `code`."""
    recorded = exit_code_for(state, code)
    return 1 if recorded is None else recorded


def new_run_id() -> str:
    return time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime()) + secrets.token_hex(3)


def new_agent_id(role: str) -> str:
    return f"{role}-{secrets.token_hex(3)}"


def resumed_runner(recorded: dict[str, Any]) -> dict[str, Any]:
    """Where a resumed run runs: here (so `strawpot cancel` reaches its agents through this machine's Denden
    server), with the remote runner it began on, if any, kept as `resumed_from`."""
    if recorded.get("kind", "local") == "local":
        return {"kind": "local", "resumed_from": recorded["resumed_from"]} if "resumed_from" in recorded else {}
    return {"kind": "local", "resumed_from": dict(recorded)}


@dataclass
class Session:
    """The live record of one run; every change is saved atomically, every event appended."""

    run_id: str
    directory: Path
    role: str
    task: str
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    state: State = RUNNING
    exit_code: int | None = None
    denden_addr: str = ""
    tmux: str = ""  # the tmux session (and socket) name when the run lives in tmux, for `strawpot attach`
    owner_pid: int = field(default_factory=os.getpid)  # the strawpot process that owns the run
    isolation: dict[str, Any] = field(default_factory=dict)  # IsolatedEnv.to_dict(): where the agents work
    merge_result: str = ""  # one line: what the end of the run made of the worktree's work (Merged.summary)
    summary: str = ""  # the main agent's final answer (bounded), once the run has ended
    inputs: dict[str, Any] = field(default_factory=dict)  # what the run ran from: lock hash, packages, settings
    sandbox: dict[str, Any] = field(default_factory=dict)  # SandboxSettings.record(): what confined the agents
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    runner: dict[str, Any] = field(default_factory=dict)  # where the session ran (a remote runner's kind and node)
    observer: Callable[[str, dict[str, Any]], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()

    @classmethod
    def create(cls, sessions_root: Path, role: str, task: str, run_id: str | None = None, *, tmux: str = "",
               observer: Callable[[str, dict[str, Any]], None] | None = None) -> Session:
        run_id = run_id or new_run_id()
        private_folder(sessions_root)
        directory = sessions_root / run_id
        directory.mkdir(mode=PRIVATE_DIR)
        os.chmod(directory, PRIVATE_DIR)  # exactly 0700, whatever the umask
        session = cls(run_id=run_id, directory=directory, role=role, task=task, tmux=tmux, observer=observer)
        session.save()
        session.event("run_started", role=role, task=task)
        return session

    @classmethod
    def reopen(cls, sessions_root: Path, run_id: str, *,
               observer: Callable[[str, dict[str, Any]], None] | None = None) -> Session:
        """An ended run, running again in this process (`strawpot resume`)."""
        saved = read_run(sessions_root, run_id)
        session = cls(run_id=run_id, directory=sessions_root / run_id, role=saved.role, task=saved.task,
                      started_at=saved.started_at or time.time(), denden_addr="", isolation=dict(saved.isolation),
                      inputs=dict(saved.inputs), agents={a.agent_id: a for a in saved.agents},
                      runner=resumed_runner(saved.runner), observer=observer)
        session.save()
        session.event("run_resumed")
        return session

    def agent_dir(self, agent_id: str) -> Path:
        return self.directory / "agents" / agent_id

    def add_agent(self, record: AgentRecord) -> None:
        with self._lock:
            self.agents[record.agent_id] = record
            self.save()
        self.event("agent_staged", agent_id=record.agent_id, role=record.role, agent=record.agent,
                   parent=record.parent, depth=record.depth)

    def agent_started(self, agent_id: str, pid: int) -> None:
        with self._lock:
            record = self.agents[agent_id]
            record.state, record.pid, record.started_at = State.RUNNING, pid, time.time()
            self.save()

    def agent_ended(self, agent_id: str, state: State, exit_code: int | None, error: str = "") -> None:
        with self._lock:
            record = self.agents[agent_id]
            record.state, record.exit_code, record.error, record.ended_at = state, exit_code, error, time.time()
            self.save()

    def agent_denied(self, agent_id: str, exit_code: int | None, evidence: list[str]) -> None:
        """Record what the sandbox refused `agent_id` (lines of its log, each kept once), then say it."""
        with self._lock:
            record = self.agents[agent_id]
            record.sandbox_denied = list(dict.fromkeys([*record.sandbox_denied, *evidence]))
            self.save()
        self.event("sandbox_denied", agent_id=agent_id, exit_code=exit_code, evidence=evidence)

    def isolation_started(self, isolation: dict[str, Any]) -> None:
        """Record the isolated environment (worktree, sandbox) the run works in, as it starts or resumes there."""
        with self._lock:
            self.isolation = isolation
            self.save()

    def isolation_ended(self, isolation: dict[str, Any], merge_result: str) -> None:
        """Record what became of the run's isolated environment at its end, and the merge's one-line result."""
        with self._lock:
            self.isolation, self.merge_result = isolation, merge_result
            self.save()

    def finish(self, state: State, exit_code: int | None, summary: str = "") -> None:
        """The run ended `state`; `summary` is its main agent's final answer (cut to SUMMARY_LIMIT characters)."""
        exit_code = exit_code_for(state, exit_code)
        with self._lock:
            self.state, self.exit_code, self.ended_at = state, exit_code, time.time()
            self.summary = bounded_summary(summary)
            self.save()
        self.event("run_finished", state=state, exit_code=exit_code)

    def record(self) -> RunRecord:
        """The run as it stands, as session.json records it."""
        with self._lock:
            return RunRecord(run_id=self.run_id, role=self.role, task=self.task, state=self.state,
                             started_at=self.started_at, exit_code=self.exit_code, ended_at=self.ended_at,
                             denden_addr=self.denden_addr, tmux=self.tmux, owner_pid=self.owner_pid,
                             isolation=self.isolation, merge_result=self.merge_result, summary=self.summary,
                             inputs=self.inputs,
                             sandbox=self.sandbox, agents=tuple(self.agents.values()), runner=self.runner)

    def to_dict(self) -> dict[str, Any]:
        return self.record().to_dict()

    def save(self) -> None:
        """Write session.json (atomically: readers see the old or the new record, never a mix).

        No fsync: it is a live status record rewritten on every state change, and a crash loses the run anyway.
        """
        with self._lock:
            write_run(self.directory, self.record(), durable=False)

    def event(self, kind: str, **data: Any) -> None:
        """Append one event to trace.jsonl as a single write, so lines never interleave."""
        line = json.dumps({"ts": time.time(), "event": kind, **data}, default=str) + "\n"
        with self._lock:
            fd = os.open(self.directory / TRACE_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        if self.observer is not None:
            self.observer(kind, data)


def private_folder(path: Path) -> None:
    """Make `path` (and missing parents) and leave it 0700: a folder made by an older version is closed too."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != PRIVATE_DIR:
        os.chmod(path, PRIVATE_DIR)


def read_trace(sessions_root: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's trace events; [] when it has none. The file is in a folder an agent or a cloned repository can
    write, so it is read without following a link (OSError for a link, FIFO or folder) and at most
    MAX_RECORD_BYTES of it (ValueError past that, or for a line that is not JSON)."""
    try:
        with open_regular(sessions_root / run_id / TRACE_FILE) as fh:
            raw = fh.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return []
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"{TRACE_FILE} of {run_id} is over {MAX_RECORD_BYTES:,} bytes")
    return [json.loads(line) for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
