"""`strawpot sessions show RUN`: one run as a person reads it, what it is, what it did, and what to do next."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.questions import Question
    from orchestrator.run_record import AgentRecord, RunRecord

TASK_SHOWN = 200  # characters of a task (and of a summary) shown, on one line; `--json` has all of it


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def took(start: float | None, end: float | None) -> str:
    if not start or not end or end < start:
        return ""
    return f"{end - start:.1f} s"


def worktree(isolation: dict[str, Any]) -> str:
    if isolation.get("kind", "none") == "none":
        return "-"
    return f"{isolation.get('branch', '')} ({isolation.get('state', '')})"


def sandbox(record: dict[str, Any]) -> str:
    if record.get("kind", "none") == "none":
        return "none"
    walls = record.get("walls")
    writable = walls.get("writable") if isinstance(walls, dict) else None
    shown = ", ".join(map(str, writable)) if isinstance(writable, list) and writable else "-"
    return f"{record['kind']} (network {record.get('network')}; writable: {shown})"


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TASK_SHOWN else line[:TASK_SHOWN - 1] + "…"


def _exit(code: int | None) -> str:
    return "" if code is None else f" (exit code {code})"


def _inputs(inputs: dict[str, Any]) -> str:
    if not inputs:
        return "not recorded"
    packages = inputs.get("packages")
    listed = len(packages) if isinstance(packages, dict) else 0
    return (f"strawpot.lock sha256 {inputs.get('lock_sha256') or '-'}, {listed} locked package"
            f"{'' if listed == 1 else 's'} (`--json` lists them, with the settings and policy)")


def _agent_lines(depth: int, agent: AgentRecord) -> list[str]:
    pad = "  " * (depth + 1)
    span = took(agent.started_at, agent.ended_at)
    extra = "".join(f", {part}" for part in (span, f"session {agent.session_id}" if agent.session_id else "") if part)
    lines = [f"{pad}{agent.agent_id}: role {agent.role}, {agent.agent}, {agent.state}{_exit(agent.exit_code)}{extra}"]
    if agent.error:
        lines.append(f"{pad}  error: {_short(agent.error)}")
    if agent.via_wildcard:
        lines.append(f"{pad}  staged through `*`: {', '.join(agent.via_wildcard)}")
    if agent.always_staged:
        lines.append(f"{pad}  staged for every agent ([session] always_stage): {', '.join(agent.always_staged)}")
    lines += [f"{pad}  sandbox denied: {line}" for line in agent.sandbox_denied]
    return lines


def next_steps(record: RunRecord, asked: Sequence[Question], owner_alive: bool) -> list[str]:
    """The commands that take this run further, as a person would type them."""
    from orchestrator.leftovers import ended_with_worktree
    from orchestrator.run_record import State

    run = record.run_id
    running = record.state == State.RUNNING and owner_alive
    steps = []
    if running:
        steps += [f"`strawpot sessions answer {run} {q.ask_id} TEXT` answers question {q.ask_id}"
                  for q in asked if q.is_open]
        if record.tmux:
            steps.append(f"`strawpot attach {run}` watches it")
        steps.append(f"`strawpot cancel {run}` stops it")
        return steps
    if record.state == State.RUNNING:
        steps.append(f"its strawpot process is gone: `strawpot cancel {run}` stops what it left running")
    for agent in record.agents:
        if agent.state == State.PAUSED and agent.session_id:
            which = "" if agent.parent is None else f" --agent {agent.agent_id}"
            steps.append(f"`strawpot resume {run}{which} --task TEXT` goes on with paused {agent.agent_id}")
    if ended_with_worktree(record):
        # the branch as prune knows it (from the run id), never as the record, which anyone may write, names it
        steps.append(f"`git log strawpot/{run}` shows the work its worktree kept; `strawpot sessions --prune` "
                     "removes it")
    if record.state in (State.FAILED, State.TIMED_OUT) and not steps:
        steps.append(f"`strawpot agents {run}` lists its agents; each one's log is agent.log in its workspace")
    return steps


def summary(record: RunRecord, asked: Sequence[Question], owner_alive: bool) -> list[str]:
    """The lines `sessions show` prints: the run, its agents as a tree, its questions, what to do next."""
    ended = f", ended {when(record.ended_at)}" if record.ended_at else ""
    span = took(record.started_at, record.ended_at)
    lines = [f"run {record.run_id}: role {record.role}, {record.state}{_exit(record.exit_code)}",
             f"task: {_short(record.task)}",
             *([f"summary: {_short(record.summary)}"] if record.summary else []),
             f"started {when(record.started_at)}{ended}" + (f" (took {span})" if span else ""),
             f"worktree: {worktree(record.isolation)}"]
    if record.merge_result:
        lines.append(f"merge: {record.merge_result}")
    lines += [f"sandbox: {sandbox(record.sandbox)}", f"inputs: {_inputs(record.inputs)}",
              f"agents: {len(record.agents)}" if record.agents else "agents: none started"]
    for depth, agent in record.tree():
        lines += _agent_lines(depth, agent)
    for q in asked:
        said = "open" if q.is_open else f"answered by {q.answered_by}: {q.answer if q.answer is not None else '-'}"
        lines.append(f"question {q.ask_id} from {q.agent_id}: {q.question} ({said})")
    steps = next_steps(record, asked, owner_alive)
    lines += ["next:", *(f"  {step}" for step in steps)] if steps else ["next: nothing to do"]
    return lines
