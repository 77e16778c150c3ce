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

    from orchestrator.session import load_session
    from strawpot.console import new_console
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project

    data = load_session(Project.at(project).sessions_dir, run_id)
    if data is None:
        raise UsageError(f"no run {run_id!r} in this project", hint="list runs with `strawpot sessions`")
    agents = data.get("agents", [])
    if as_json:
        print_json({"run_id": run_id, "agents": agents})
        return
    table = Table("agent", "role", "runtime", "parent", "depth", "state", "pid", "exit", box=None)
    for a in agents:
        exit_code = a.get("exit_code")
        table.add_row(a["agent_id"], a["role"], a.get("agent", ""), a.get("parent") or "-", str(a.get("depth", 0)),
                      a.get("state", ""), str(a.get("pid") or "-"), "-" if exit_code is None else str(exit_code))
    new_console(stderr=False).print(table)
