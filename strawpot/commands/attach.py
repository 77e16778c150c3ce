"""`strawpot attach RUN_ID`: re-attach this terminal to a run living in its tmux session."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import project_option

SECTION = "sessions"


@click.command()
@click.argument("run_id", shell_complete=complete_run_id)
@project_option
def command(run_id: str, project: Path | None) -> None:
    """Attach to the tmux session `strawpot-RUN_ID` of a running interactive run (detach again with C-b d).

    Exits 2 when the run is unknown, has ended, or was not started in tmux; after the run ends while
    attached, exits with its exit code.
    """
    from orchestrator.run_record import State, read_run
    from orchestrator.tmux import TmuxMissing, TmuxSession
    from strawpot.commands._interactive import attach_and_report, can_attach
    from strawpot.model.errors import MissingToolError, UsageError
    from strawpot.model.layout import Project

    the_project = Project.at(project)
    record = read_run(the_project.sessions_dir, run_id)
    if record.state != State.RUNNING:
        raise UsageError(f"run {run_id} has ended ({record.state}, exit code {record.exit_code}); "
                         "there is nothing to attach to", hint=f"see what it did with `strawpot agents {run_id}`")
    if not record.tmux:
        raise UsageError(f"run {run_id} is not in tmux (it was started with --attach direct or --task)",
                         hint=f"stop it with `strawpot cancel {run_id}`")
    if not can_attach():
        raise UsageError("attach needs a terminal")
    try:
        tmux = TmuxSession(run_id)
    except TmuxMissing:
        raise MissingToolError("tmux is not on PATH", hint="install tmux (e.g. `apt-get install tmux`)") from None
    if not tmux.alive():
        raise UsageError(f"run {run_id} has no tmux session any more (its strawpot process is gone)",
                         hint=f"clean up with `strawpot cancel {run_id}`")
    raise SystemExit(attach_and_report(the_project, run_id, tmux))
