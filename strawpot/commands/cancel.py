"""`strawpot cancel RUN_ID [--agent ID]`: end a run, or one agent and its sub-agents, from another terminal."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, print_json, project_option
from strawpot.model.plural import count

SECTION = "sessions"


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
    from orchestrator.run_control import cancel_run
    from strawpot.model.layout import Project

    done = cancel_run(Project.at(project).sessions_dir, run_id, agent_id, force=force)
    if done.orphaned:
        click.echo(f"run {run_id}: its strawpot process is gone; stopped the agents it left running", err=True)
    if as_json:
        print_json({"run_id": run_id, "agent_id": done.agent_id, "cancelled": done.stopped,
                    "run_state": done.run_state})
        return
    click.echo(f"cancelled {count(len(done.stopped), 'agent')} of run {run_id}: "
               f"{', '.join(done.stopped) or 'none running'}", err=True)
    if done.run_state:
        click.echo(f"run {run_id} {done.run_state}", err=True)
