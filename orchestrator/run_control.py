"""What a person does to a run from outside it: cancel it, answer its agent's question, check it can be resumed,
prune what ended runs left. The commands and the dashboard both call these; each refusal is a typed error.

Resuming itself outlives whoever asks (it runs the agent again), so its callers run `strawpot resume` once
`resume` here said it can go ahead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import leftovers, questions
from orchestrator.client import CancelFailed, cancel
from orchestrator.inputs import check_same_lock
from orchestrator.leftovers import Leftover
from orchestrator.orphans import owner_alive, stop_orphans
from orchestrator.run_record import AgentRecord, RunRecord, RunRecordBroken, State, find_run, read_run
from orchestrator.run_token import read_token
from strawpot.model.errors import StrawpotError, UsageError
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile
from strawpot.model.plural import count

END_WAIT = 15.0  # seconds cancelling a whole run waits for its owner to record the end


class RunNotRunning(UsageError):
    """The run has ended: nothing to cancel (exit 2)."""


class CancelRefused(UsageError):
    """The run's server refused (no such agent, say), or the run has no agent yet (exit 2)."""


class RunNotAnswering(StrawpotError):
    """The run's server does not answer though its strawpot process lives (exit 1)."""


class AnswerNotTaken(StrawpotError):
    """An answer the run's question cannot take; `reason`: "unknown", "answered", "ended" or "invalid"."""

    def __init__(self, message: str, reason: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason
        self.exit_code = 2 if reason in ("unknown", "invalid") else 1


class CannotResume(UsageError):
    """The run or agent cannot be resumed: still running, no such agent, not resumable (exit 2)."""


class UnmergedWorkKept(UsageError):
    """Pruning without anyone to ask kept the leftovers holding unmerged work (exit 2); `pruned` says the rest."""

    def __init__(self, pruned: Pruned) -> None:
        super().__init__(f"kept {count(len(pruned.kept), 'leftover')} holding unmerged work: "
                         + "; ".join(left.describe() for left in pruned.kept),
                         hint="look at it with `git log strawpot/RUN_ID`; `strawpot sessions --prune --force` "
                              "deletes it (on a terminal you are asked)")
        self.pruned = pruned


@dataclass(frozen=True)
class Cancelled:
    run_id: str
    agent_id: str  # the agent asked for (the run's root when the whole run was cancelled)
    stopped: list[str]  # the agents that were stopped
    run_state: str | None  # the run's final state, when the whole run was cancelled and ended in time
    orphaned: bool = False  # its strawpot process was gone: the agents it left were stopped here


def cancel_run(sessions_root: Path, run_id: str, agent_id: str | None = None, *, force: bool = False,
               wait: float = END_WAIT) -> Cancelled:
    """Ask the run's own Denden server to stop `agent_id` (default: the run's root, so the whole run) and
    everything below it; when the run's strawpot process is gone, stop the agents it left."""
    record = read_run(sessions_root, run_id)
    if record.state != State.RUNNING:
        raise RunNotRunning(f"run {run_id} has ended ({record.state}); there is nothing to cancel")
    root = record.root
    remote = record.runner.get("kind", "local") != "local"  # its agents are on a worker: the whole run is the target
    target = agent_id or (run_id if remote else root.agent_id if root else "")
    if not target:
        raise CancelRefused(f"run {run_id} has no agent yet", hint="try again in a moment")
    orphaned = False
    try:
        stopped = cancel(record.denden_addr, run_id, target, force=force, token=read_token(run_id))
    except CancelFailed as exc:
        if not exc.unreachable:
            raise CancelRefused(f"run {run_id}: {exc}",
                                hint=f"list its agents with `strawpot agents {run_id}`") from None
        if owner_alive(record):
            raise RunNotAnswering(f"run {run_id}: {exc}", hint="try again, or stop its strawpot process "
                                  f"(pid {record.owner_pid})") from None
        stopped, orphaned = stop_orphans(sessions_root / run_id, record), True
    whole = target == run_id if remote else root is not None and target == root.agent_id
    ended = _wait_for_end(sessions_root, run_id, wait) if whole else None
    return Cancelled(run_id, target, stopped, ended, orphaned)


def _wait_for_end(sessions_root: Path, run_id: str, wait: float) -> str | None:
    """The run's final state once its owner recorded it (bounded wait), or None."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            record = find_run(sessions_root, run_id)
        except RunRecordBroken:
            record = None  # caught mid-write by someone who does not rename: look again
        if record is not None and record.state != State.RUNNING:
            return str(record.state)
        time.sleep(0.05)
    return None


def answer(sessions_root: Path, run_id: str, ask_id: str, text: str, by: str) -> questions.Question:
    """Answer question `ask_id` of a running run whose questions wait in its folder (`by`: "cli" or "ui")."""
    read_run(sessions_root, run_id)
    try:
        return questions.answer(sessions_root / run_id, ask_id, text, by)
    except questions.AnswerRefused as exc:
        raise AnswerNotTaken(str(exc), exc.reason,
                             hint=f"`strawpot sessions show {run_id}` lists its questions") from None


@dataclass(frozen=True)
class ResumeTarget:
    """A run and the agent of it that `strawpot resume` may continue."""

    record: RunRecord
    agent: AgentRecord


def resume(project: Project, run_id: str, agent_id: str | None = None) -> ResumeTarget:
    """Check that `agent_id` (default: the run's root) of `run_id` can be resumed: the run is not running, the
    agent is there with a session id, strawpot.lock is the one the run started with (LockOutdated, exit 4)."""
    record = read_run(project.sessions_dir, run_id)
    if record.state == State.RUNNING and owner_alive(record):
        raise CannotResume(f"run {run_id} is still running", hint=f"`strawpot attach {run_id}` or wait for it to end")
    agent = record.agent(agent_id) if agent_id else record.root
    if agent is None and not record.agents and record.runner.get("node"):
        raise CannotResume(f"run {run_id} ran on {remote_node(record)} and no agent of it came back: there is "
                           "nothing to resume", hint=f"start a new run (`strawpot sessions show {run_id}` says how "
                                                     "it ended)")
    if agent is None:
        known = ", ".join(a.agent_id for a in record.agents) or "none"
        raise CannotResume(f"run {run_id} has no agent {agent_id!r} (its agents: {known})" if agent_id
                           else f"run {run_id} has no root agent to resume")
    if not agent.session_id:
        raise CannotResume(f"agent {agent.agent_id} ({agent.agent}) cannot be resumed: its package does not declare "
                           "metadata.strawpot.session.resume", hint="start a new run instead")
    check_same_lock(run_id, record.inputs, project.lock_path, Lockfile.load(project.lock_path))
    return ResumeTarget(record, agent)


def remote_node(record: RunRecord) -> str:
    """The node a remote run ran on, as `start` names it (`Ray node ID (HOST)`)."""
    return f"Ray node {record.runner.get('node')} ({record.runner.get('host', '?')})"


@dataclass(frozen=True)
class Pruned:
    """What pruning found and did; with `dry_run`, `removed` is what would be removed."""

    recovered: list[str] = field(default_factory=list)  # half-done merge-backs undone first, a line each
    refused: list[Leftover] = field(default_factory=list)  # left alone: not ours to remove (a link, unknown to git)
    removed: list[Leftover] = field(default_factory=list)
    kept: list[Leftover] = field(default_factory=list)  # holding unmerged work, and nobody said to delete it
    warnings: list[str] = field(default_factory=list)  # what was put back or could not be removed
    dry_run: bool = False


def prune_runs(sessions_root: Path, project_dir: Path, *, dry_run: bool = False, force: bool = False,
               confirm: Callable[[list[Leftover]], bool] | None = None) -> Pruned:
    """Remove the worktrees and `strawpot/<run id>` branches ended runs left (`leftovers` finds them with git).

    One holding work no other branch has goes only with `force`, or when `confirm(those)` says yes; with no
    `confirm` (nobody to ask) the others go and UnmergedWorkKept names what stayed.
    """
    recovered = [] if dry_run else leftovers.recover(project_dir)
    found = leftovers.find(sessions_root, project_dir)
    refused = [left for left in found if left.refused]
    removable = [left for left in found if not left.refused]
    if dry_run:
        return Pruned(recovered, refused, removable, dry_run=True)
    with_work = [left for left in removable if left.work]
    kept = [] if force or not with_work or (confirm is not None and confirm(with_work)) else with_work
    removed = [left for left in removable if left not in kept]
    warnings = []
    for left in removed:
        warnings += leftovers.remove(left)
        leftovers.mark_removed(sessions_root, left.run_id)
    pruned = Pruned(recovered, refused, removed, kept, warnings)
    if kept and confirm is None:
        raise UnmergedWorkKept(pruned)
    return pruned
