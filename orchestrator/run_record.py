"""A run's record, `session.json` in its run folder: the one reader and writer of it, typed.

The run folder is one an agent or a cloned repository can write, so the file is read without following a link,
bounded in size, and every field is checked: a broken record is a `RunRecordBroken` naming the file and what
is wrong with it, never a traceback. The JSON shape is the one docs/sessions.md describes.
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write, open_nofollow

SESSION_FILE = "session.json"
SESSION_FORMAT = 1
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
SUMMARY_LIMIT = 8000  # characters of a main agent's final answer a run records as its summary
MAX_RECORD_BYTES = 16 * 1024 * 1024  # a record of thousands of agents is a few MiB
RUN_ID_RE = re.compile(r"run_\d{8}_\d{6}_[0-9a-f]{6}")
STOPPED_EXIT_CODE = 130  # the shell's code for Ctrl-C


class State(StrEnum):
    """A run's or an agent's state, written as its value in session.json (docs/sessions.md lists them)."""

    STAGED = "staged"  # an agent only: its workspace is ready, its process not started yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    PAUSED = "paused"  # may be resumed: `strawpot resume`
    INTERRUPTED = "interrupted"  # a run only: its `start` got Ctrl-C (or SIGTERM)


FINAL_STATES = frozenset({State.SUCCEEDED, State.FAILED, State.TIMED_OUT, State.CANCELLED, State.PAUSED})  # an agent's


class RunNotFound(UsageError):
    """No run of that id in the sessions folder (exit 2)."""

    def __init__(self, sessions_root: Path, run_id: str) -> None:
        super().__init__(f"no run {run_id!r} in {sessions_root}", hint="`strawpot sessions` lists the runs")
        self.run_id = run_id


class RunRecordBroken(UsageError):
    """A session.json that is not a run record (corrupt, hand-edited, planted); exit 2."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"the run record {path} is unreadable: {reason}",
                         hint="restore it, or remove the run's folder")
        self.path, self.reason = path, reason


class _Bad(ValueError):
    """What is wrong with one field, before the file's path is known."""


def bounded_summary(text: str) -> str:
    """A final answer as a run records it: at most SUMMARY_LIMIT characters, a cut one saying so at its end."""
    text = text.strip()
    if len(text) <= SUMMARY_LIMIT:
        return text
    return text[:SUMMARY_LIMIT - 40].rstrip() + f"\n… (cut: {len(text):,} characters in all)"


@dataclass
class AgentRecord:
    """One agent of a run, as listed by `strawpot agents RUN_ID`."""

    agent_id: str
    role: str
    agent: str  # the agent package (runtime) that plays the role
    parent: str | None
    depth: int
    task: str
    workspace: str
    state: State = State.STAGED
    pid: int | None = None
    exit_code: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: str = ""
    session_id: str = ""  # a resumable agent's conversation id, recorded before it is spawned
    packages: list[str] = field(default_factory=list)  # what was staged for it: "kind:name@version"
    via_wildcard: list[str] = field(default_factory=list)  # those of `packages` only a `*` of its role brought in
    always_staged: list[str] = field(default_factory=list)  # those only `[session] always_stage` brought in
    sandbox_denied: list[str] = field(default_factory=list)  # log lines where the sandbox refused it something

    def restaged(self, task: str) -> AgentRecord:
        """This agent staged again for `task` (`strawpot resume`): same id, workspace and conversation."""
        return replace(self, task=task, state=State.STAGED, ended_at=None, exit_code=None, error="")

    @classmethod
    def from_dict(cls, data: Any, where: str = "an agent") -> AgentRecord:
        """The agent `data` records; ValueError naming the field when it is not one."""
        if not isinstance(data, dict):
            raise _Bad(f"{where} is not an object")
        agent_id = _text(data, "agent_id", where)
        if not agent_id:
            raise _Bad(f"{where} has no agent_id")
        where = f"agent {agent_id}"
        return cls(agent_id=agent_id, role=_text(data, "role", where), agent=_text(data, "agent", where),
                   parent=_text(data, "parent", where) or None, depth=_int(data, "depth", where) or 0,
                   task=_text(data, "task", where), workspace=_text(data, "workspace", where),
                   state=_state(data, where, State.STAGED), pid=_int(data, "pid", where),
                   exit_code=_int(data, "exit_code", where), started_at=_number(data, "started_at", where),
                   ended_at=_number(data, "ended_at", where), error=_text(data, "error", where),
                   session_id=_text(data, "session_id", where), packages=_texts(data, "packages", where),
                   via_wildcard=_texts(data, "via_wildcard", where),
                   always_staged=_texts(data, "always_staged", where),
                   sandbox_denied=_texts(data, "sandbox_denied", where))


@dataclass(frozen=True)
class RunRecord:
    """What session.json says of one run: its role, task, state, agents, worktree, sandbox and inputs."""

    run_id: str
    role: str
    task: str
    state: State
    started_at: float
    exit_code: int | None = None
    ended_at: float | None = None
    denden_addr: str = ""
    tmux: str = ""  # the tmux session (and socket) name when the run lives in tmux, for `strawpot attach`
    owner_pid: int | None = None  # the strawpot process that owns the run
    isolation: dict[str, Any] = field(default_factory=dict)  # IsolatedEnv.to_dict(): where the agents work
    merge_result: str = ""  # one line: what the end of the run made of the worktree's work (Merged.summary)
    summary: str = ""  # the main agent's final answer, at most SUMMARY_LIMIT characters
    inputs: dict[str, Any] = field(default_factory=dict)  # what the run ran from: lock hash, packages, settings
    sandbox: dict[str, Any] = field(default_factory=dict)  # SandboxSettings.record(): what confined the agents
    agents: tuple[AgentRecord, ...] = ()
    runner: dict[str, Any] = field(default_factory=dict)  # where the session ran: {"kind": "ray", "node": ...}

    @property
    def root(self) -> AgentRecord | None:
        """The run's first agent, the one no other agent delegated to."""
        return next((a for a in self.agents if not a.parent), None)

    def agent(self, agent_id: str) -> AgentRecord | None:
        return next((a for a in self.agents if a.agent_id == agent_id), None)

    def tree(self) -> list[tuple[int, AgentRecord]]:
        """The agents in delegation order (a parent before its children), each with its depth in the tree."""
        ids = {a.agent_id for a in self.agents}
        children: dict[str | None, list[AgentRecord]] = {}
        for a in self.agents:
            children.setdefault(a.parent if a.parent in ids else None, []).append(a)
        out: list[tuple[int, AgentRecord]] = []
        todo: list[tuple[int, AgentRecord]] = [(0, a) for a in reversed(children.get(None, []))]
        seen: set[str] = set()
        while todo:  # a stack, not recursion: a record can nest agents deeper than Python recurses
            depth, agent = todo.pop()
            if agent.agent_id in seen:
                continue
            seen.add(agent.agent_id)
            out.append((depth, agent))
            todo += [(depth + 1, c) for c in reversed(children.get(agent.agent_id, []))]
        return out + [(0, a) for a in self.agents if a.agent_id not in seen]  # parents in a loop: shown anyway

    def to_dict(self) -> dict[str, Any]:
        """The record as session.json holds it (and `--json` prints it)."""
        return {
            "format": SESSION_FORMAT,
            "run_id": self.run_id,
            "role": self.role,
            "task": self.task,
            "state": self.state,
            "exit_code": self.exit_code,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "denden_addr": self.denden_addr,
            "tmux": self.tmux,
            "owner_pid": self.owner_pid,
            "isolation": self.isolation,
            "merge_result": self.merge_result,
            "summary": self.summary,
            "inputs": self.inputs,
            "sandbox": self.sandbox or {"kind": "none"},
            "agents": [asdict(a) for a in self.agents],
            "runner": self.runner or {"kind": "local"},
        }

    @classmethod
    def from_dict(cls, data: Any) -> RunRecord:
        """The run `data` records; ValueError naming the field when it is not one."""
        if not isinstance(data, dict):
            raise _Bad("it is not a JSON object")
        agents = data.get("agents", [])
        if not isinstance(agents, list):
            raise _Bad("agents is not a list")
        where = "the run"
        started = _number(data, "started_at", where)
        return cls(run_id=_text(data, "run_id", where), role=_text(data, "role", where),
                   task=_text(data, "task", where), state=_state(data, where, None),
                   started_at=started or 0.0, exit_code=_int(data, "exit_code", where),
                   ended_at=_number(data, "ended_at", where), denden_addr=_text(data, "denden_addr", where),
                   tmux=_text(data, "tmux", where), owner_pid=_int(data, "owner_pid", where),
                   isolation=_object(data, "isolation", where), merge_result=_text(data, "merge_result", where),
                   summary=_text(data, "summary", where), inputs=_object(data, "inputs", where), sandbox=_object(data, "sandbox", where),
                   runner=_object(data, "runner", where),
                   agents=tuple(AgentRecord.from_dict(a, f"agent #{i + 1}") for i, a in enumerate(agents)))


# -- the file ------------------------------------------------------------------------------------------------


def record_path(sessions_root: Path, run_id: str) -> Path | None:
    """Where run `run_id`'s record is, or None for an id that could name another folder."""
    if not run_id or "/" in run_id or "\0" in run_id or run_id.startswith("."):
        return None
    return sessions_root / run_id / SESSION_FILE


def find_run(sessions_root: Path, run_id: str) -> RunRecord | None:
    """The record of `run_id`; None when there is no such run; RunRecordBroken when its file is no record."""
    path = record_path(sessions_root, run_id)
    if path is None:
        return None
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise RunRecordBroken(path, exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise RunRecordBroken(path, f"it is over {MAX_RECORD_BYTES // (1024 * 1024)} MiB")
    try:
        return RunRecord.from_dict(json.loads(raw.decode("utf-8")))
    except UnicodeDecodeError:
        raise RunRecordBroken(path, "it is not UTF-8 text") from None
    except RecursionError:
        raise RunRecordBroken(path, "it nests too deep") from None
    except ValueError as exc:  # JSONDecodeError included
        raise RunRecordBroken(path, str(exc)) from None


def read_run(sessions_root: Path, run_id: str) -> RunRecord:
    """The record of `run_id`: RunNotFound when there is none, RunRecordBroken when its file is no record."""
    record = find_run(sessions_root, run_id)
    if record is None:
        raise RunNotFound(sessions_root, run_id)
    return record


def readable_runs(sessions_root: Path, broken: list[RunRecordBroken] | None = None) -> Iterator[RunRecord]:
    """The record of every run folder under `sessions_root` that holds a readable one (unordered); the others'
    reasons go to `broken` when given."""
    try:
        names = [entry.name for entry in os.scandir(sessions_root)]
    except OSError:
        return
    for name in names:
        try:
            record = find_run(sessions_root, name)
        except RunRecordBroken as exc:
            if broken is not None:
                broken.append(exc)
            continue
        if record is not None:
            yield record


def list_runs(sessions_root: Path, broken: list[RunRecordBroken] | None = None) -> list[RunRecord]:
    """Every readable run record, newest first (the unreadable ones' reasons to `broken`, when given)."""
    return sorted(readable_runs(sessions_root, broken), key=lambda r: r.started_at, reverse=True)


def write_run(run_dir: Path, record: RunRecord, *, durable: bool = True) -> None:
    """Write the record by temp file + rename (0600): readers see the old or the new record, never a mix."""
    atomic_write(run_dir / SESSION_FILE, json.dumps(record.to_dict(), indent=2) + "\n", mode=PRIVATE_FILE,
                 durable=durable)


# -- fields: each as session.json may hold it, else _Bad naming it ----------------------------------------------


def _text(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Bad(f"{where}: {key} is not a string")
    return value


def _int(data: dict[str, Any], key: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad(f"{where}: {key} is not a whole number")
    return value


def _number(data: dict[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _Bad(f"{where}: {key} is not a number")
    return float(value)


def _object(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"{where}: {key} is not an object")
    return value


def _texts(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"{where}: {key} is not a list of strings")
    return list(value)


def _state(data: dict[str, Any], where: str, default: State | None) -> State:
    value = data.get("state")
    if value is None and default is not None:
        return default
    try:
        return State(value if isinstance(value, str) else "")
    except ValueError:
        known = ", ".join(s.value for s in State)
        raise _Bad(f"{where}: state {str(value)[:40]!r} is not one of {known}") from None
