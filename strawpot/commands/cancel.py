"""`strawpot cancel RUN_ID [--agent ID]`: end a run, or one agent and its sub-agents, from another terminal."""

from __future__ import annotations

import time
from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, print_json, project_option
from strawpot.model.plural import count

SECTION = "sessions"
END_WAIT = 15.0


@click.command()
@click.argument("run_id", shell_complete=complete_run_id)
@click.option("--agent", "agent_id", metavar="ID", help="Cancel this agent and its sub-agents only "
              "(ids: `strawpot agents RUN_ID`); without it the orchestrator, so the whole run, ends.")
@click.option("--force", is_flag=True, help="Kill at once (SIGKILL) instead of SIGTERM then a grace period.")
@project_option
@json_option
def command(run_id: str, agent_id: str | None, force: bool, project: Path | None, as_json: bool) -> None:
    """Ask the run's own Denden server to stop an agent and everything below it.

    Exits 2 for an unknown or ended run or an unknown agent, 1 when the run's server does not answer.
    """
    from orchestrator.client import CancelFailed, cancel
    from orchestrator.orphans import owner_alive, stop_orphans
    from orchestrator.run_token import read_token
    from orchestrator.session import State, load_session
    from strawpot.model.errors import StrawpotError, UsageError
    from strawpot.model.layout import Project

    sessions = Project.at(project).sessions_dir
    data = load_session(sessions, run_id)
    if data is None:
        raise UsageError(f"no run {run_id!r} in this project", hint="list runs with `strawpot sessions`")
    if data.get("state") != State.RUNNING:
        raise UsageError(f"run {run_id} has ended ({data.get('state')}); there is nothing to cancel")
    root = next((a["agent_id"] for a in data.get("agents", []) if not a.get("parent")), None)
    target = agent_id or root
    if not target:
        raise UsageError(f"run {run_id} has no agent yet", hint="try again in a moment")
    try:
        stopped = cancel(str(data.get("denden_addr", "")), run_id, target, force=force,
                         token=read_token(run_id))
    except CancelFailed as exc:
        if not exc.unreachable:
            raise UsageError(f"run {run_id}: {exc}",
                             hint=f"list its agents with `strawpot agents {run_id}`") from None
        if owner_alive(data):
            raise StrawpotError(f"run {run_id}: {exc}", hint="try again, or stop its strawpot process "
                                f"(pid {data.get('owner_pid')})") from None
        stopped = stop_orphans(sessions / run_id, data)  # its strawpot died: stop what it left running
        click.echo(f"run {run_id}: its strawpot process is gone; stopped the agents it left running", err=True)
    ended = _wait_for_end(sessions, run_id) if target == root else None
    if as_json:
        print_json({"run_id": run_id, "agent_id": target, "cancelled": stopped, "run_state": ended})
        return
    click.echo(f"cancelled {count(len(stopped), 'agent')} of run {run_id}: {', '.join(stopped) or 'none running'}", err=True)
    if ended:
        click.echo(f"run {run_id} {ended}", err=True)


def _wait_for_end(sessions: Path, run_id: str) -> str | None:
    """The run's final state once its owner recorded it (bounded wait), or None."""
    from orchestrator.session import State, load_session

    deadline = time.monotonic() + END_WAIT
    while time.monotonic() < deadline:
        data = load_session(sessions, run_id) or {}
        if data.get("state") != State.RUNNING:
            return str(data.get("state"))
        time.sleep(0.05)
    return None
