"""`strawpot agents RUN_ID`: the agents of one run, with parents, roles, states and pids."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, print_json, project_option

SECTION = "sessions"


@click.command()
@click.argument("run_id", shell_complete=complete_run_id)
@project_option
@json_option
def command(run_id: str, project: Path | None, as_json: bool) -> None:
    """List the agents of run RUN_ID (see `strawpot sessions`)."""
    from rich.table import Table

    from orchestrator.run_record import read_run
    from strawpot.console import new_console
    from strawpot.model.layout import Project

    record = read_run(Project.at(project).sessions_dir, run_id)
    if as_json:
        print_json({"run_id": run_id, "agents": record.to_dict()["agents"]})
        return
    table = Table("agent", "role", "runtime", "parent", "depth", "state", "pid", "exit", box=None)
    for a in record.agents:
        table.add_row(a.agent_id, a.role, a.agent, a.parent or "-", str(a.depth), a.state, str(a.pid or "-"),
                      "-" if a.exit_code is None else str(a.exit_code))
    new_console(stderr=False).print(table)
