"""`strawpot sessions`: list the runs of this project, newest first."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rich_click as click

from strawpot.commands._options import json_option, print_json, project_option

SECTION = "sessions"


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


@click.command()
@project_option
@json_option
def command(project: Path | None, as_json: bool) -> None:
    """List the runs recorded under .strawpot/sessions/ (newest first)."""
    from rich.console import Console
    from rich.table import Table

    from orchestrator.session import list_sessions
    from strawpot.model.layout import Project

    runs = list_sessions(Project.at(project).sessions_dir)
    if as_json:
        print_json({"sessions": [{k: v for k, v in r.items() if k != "agents"} | {"agents": len(r.get("agents", []))}
                                 for r in runs]})
        return
    if not runs:
        click.echo("no sessions yet (run `strawpot start`)", err=True)
        return
    table = Table("run", "started", "role", "state", "exit", "agents", box=None)
    for r in runs:
        exit_code = r.get("exit_code")
        table.add_row(str(r.get("run_id")), _when(r.get("started_at")), str(r.get("role", "")), str(r.get("state", "")),
                      "-" if exit_code is None else str(exit_code), str(len(r.get("agents", []))))
    # piped output keeps whole ids and dates rather than wrapping to 80 columns
    Console(highlight=False, width=None if sys.stdout.isatty() else 200).print(table)
