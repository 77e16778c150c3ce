"""What `start`, `attach` and `setup` do on a terminal: ask for missing env vars, attach to a run's tmux session."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import rich_click as click

if TYPE_CHECKING:
    from orchestrator.envvars import EnvNeed
    from orchestrator.launch import Prepared
    from orchestrator.run_record import RunRecord
    from orchestrator.tmux import TmuxSession
    from strawpot.model.layout import Project


def on_terminal() -> bool:
    """Someone can answer: prompts go to stderr (or /dev/tty) and answers come from stdin."""
    return sys.stdin.isatty()


def can_attach() -> bool:
    """A terminal to attach a tmux client to: both input and output."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask_for_env(prepared: Prepared, missing: list[EnvNeed], *,
                read_secret: Callable[[str], str] = getpass.getpass,
                confirm: Callable[[str], bool] | None = None) -> None:
    """Ask for each missing variable (input hidden) and offer to save it to the global config (0600).

    An empty answer leaves it missing: exit 7 naming every variable still missing.
    """
    from orchestrator.launch import missing_env_error
    from strawpot.config_files import config_path, save_config_value

    confirm = confirm or (lambda text: click.confirm(text, default=False, err=True))
    still: list[EnvNeed] = []
    for need in missing:
        click.echo(f"{need.describe()} is not set.", err=True)
        value = read_secret(f"{need.spec.name} (input hidden, empty to skip): ")
        if not value:
            still.append(need)
            continue
        prepared.env.supply(need, value)
        if confirm(f"Save {need.spec.name} to {config_path()} for next time?"):
            saved = save_config_value([need.kind.plural, need.package, "env", need.spec.name], value)
            click.echo(f"saved to [{need.kind.plural}.{need.package}.env] in {saved}", err=True)
    if still:
        raise missing_env_error(still)


def attach_and_report(project: Project, run_id: str, tmux: TmuxSession) -> int:
    """Attach to the run's session; on return say whether it was detached (still running) or ended, and how.

    The exit code is 0 after a detach, else the run's (130 when it was cancelled or interrupted).
    """
    from orchestrator.run_record import find_run
    from strawpot.model.errors import StrawpotError

    tmux.attach()
    if tmux.alive():
        click.echo(f"detached from run {run_id}; it keeps running in tmux session {tmux.name}\n"
                   f"  re-attach: strawpot attach {run_id}\n  stop it:   strawpot cancel {run_id}", err=True)
        return 0
    record = find_run(project.sessions_dir, run_id)
    if record is None:
        raise StrawpotError(f"run {run_id} ended before it started",
                            hint="run `strawpot start --attach direct` to see why")
    return report_end(run_id, record)


def report_end(run_id: str, record: RunRecord) -> int:
    """Say what the sandbox refused the run's agents (the tmux window that showed it has closed), then how the
    run ended; its exit code."""
    from orchestrator.session import command_exit_code
    from strawpot.commands._run_output import Denials

    for line in Denials(run_id).of_record(record):
        click.echo(line, err=True)
    exit_code = command_exit_code(record.state, record.exit_code)
    click.echo(f"run {run_id} {record.state} (exit code {exit_code})", err=True)
    return exit_code

