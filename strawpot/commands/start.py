"""`strawpot start`: verify the locked environment, start Denden, run the orchestrator role to its end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._complete import complete_role
from strawpot.commands._options import existing_project, json_option, project_option

if TYPE_CHECKING:
    from orchestrator.launch import Prepared

SECTION = "sessions"


@click.command()
@click.option("--role", metavar="ROLE", shell_complete=complete_role, help="Role to start (default: [orchestrator].role).")
@click.option("--runtime", metavar="AGENT", help="Agent that plays every role (overrides all other bindings).")
@click.option("--task", metavar="TEXT", help="Task for the orchestrator role; without it the agent is interactive.")
@click.option("--headless", is_flag=True, help="No terminal: ask_user gets defaults (or waits in the run folder: "
              "[session] ask); needs --task.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Set a param of the agent that plays the started role, for this run (repeatable).")
@click.option("--attach", "attach_mode", type=click.Choice(["tmux", "direct"]), default=None,
              help="Interactive runs: in a tmux session you can detach from (default when tmux is on PATH), "
                   "or directly on this terminal.")
@click.option("--progress", type=click.Choice(["text", "json"]), default="text",
              help="json: one JSON line per spawn, delegate, deny and end on stderr (docs/sessions.md).")
@click.option("--isolation", type=click.Choice(["none", "worktree"]), default=None,
              help="Where the agents work: the project folder, or a git worktree on branch strawpot/<run id> "
                   "(default: [session].isolation).")
@click.option("--merge", "merge", type=click.Choice(["patch", "branch", "pr"]), default=None,
              help="How a worktree session's work comes back (default: [session].merge, else patch).")
@click.option("--sandbox", type=click.Choice(["none", "bwrap"]), default=None,
              help="What confines the agents: nothing, or bubblewrap (read-only system, secrets hidden; "
                   "default: [session].sandbox; docs/sessions.md).")
@click.option("--runner", type=click.Choice(["local", "ray"]), default=None,
              help="Where the whole session runs: here, or on a Ray cluster's worker (strawpot[ray]; needs --task; "
                   "default: [session].runner; docs/deploy.md).")
# the run id to use: the run inside tmux (started by the outer start), or a headless run of the scheduler or the UI
@click.option("--run-id", "given_run", hidden=True, default=None)
@project_option
@json_option
def command(role: str | None, runtime: str | None, task: str | None, headless: bool, params: tuple[str, ...],
            attach_mode: str | None, progress: str, isolation: str | None, merge: str | None, sandbox: str | None,
            runner: str | None, given_run: str | None, project: Path | None, as_json: bool) -> None:
    """Start the orchestrator role from the verified, locked environment and wait for it.

    Refuses (exit 5) when the installed packages differ from strawpot.lock, (exit 2) on a bad --param,
    and (exit 7) when an agent's tools or required environment variables are missing, before anything is
    spawned; on a terminal it asks for missing variables instead. Without --task the orchestrator is
    interactive: in tmux session `strawpot-<run id>` (detach and `strawpot attach RUN_ID`), or on this
    terminal. Exits with the orchestrator agent's exit code; Ctrl-C stops every agent it started.
    """
    from orchestrator.launch import missing_env_error, prepare
    from orchestrator.session import RUN_ID_RE, new_run_id
    from strawpot.commands._interactive import ask_for_env, on_terminal
    from strawpot.model.errors import UsageError
    from strawpot.model.params import parse_assignments

    if headless and not task:
        raise UsageError("--headless needs --task (there is no one to talk to the agent)")
    terminal = not headless and on_terminal()
    if not task and not terminal:
        raise UsageError("no --task and no terminal: there is no one to talk to the orchestrator",
                         hint="pass --task TEXT (with --headless for unattended runs), or run on a terminal")
    if given_run is not None and not RUN_ID_RE.fullmatch(given_run):
        raise UsageError(f"--run-id {given_run!r} is not a run id")
    in_tmux = _wants_tmux(attach_mode, task, terminal) and given_run is None
    from strawpot.config_files import load_settings

    the_project = existing_project(project)
    settings = load_settings(the_project, {"session.isolation": ("--isolation", isolation),
                                           "session.merge": ("--merge", merge),
                                           "session.sandbox": ("--sandbox", sandbox),
                                           "session.runner": ("--runner", runner)})
    for overruled in settings.overruled:
        click.echo(f"warning: {overruled}", err=True)
    from orchestrator.runners import runner_for

    where = runner_for(settings)  # exit 7 naming the extra when the runner's engine is not installed
    if where.name != "local" and not task:
        raise UsageError(f"--runner {where.name} needs --task: no terminal reaches the worker",
                         hint="pass --task TEXT")
    prepared = prepare(the_project, settings, role=role, cli_agent=runtime, params=parse_assignments(params),
                       saved_env=settings.saved_env())
    from orchestrator.projects import record_use
    record_use(the_project.dir)  # the projects list of `strawpot ui`
    if missing := prepared.missing_env():
        if not terminal:
            raise missing_env_error(missing)
        if not in_tmux:  # in tmux the run's own start asks, on the session's terminal: no secret crosses over
            ask_for_env(prepared, missing)
    if in_tmux:
        flags = ("--isolation", settings.get("session.isolation"), "--merge", settings.get("session.merge"),
                 "--sandbox", settings.get("session.sandbox"))
        raise SystemExit(_start_in_tmux(prepared, new_run_id(), role, runtime, task, (*params,), progress, flags))
    from orchestrator.run_request import RunRequest
    from orchestrator.tmux import session_name
    from strawpot.commands._run_output import RunOutput
    from strawpot.config_files import ask_wait, env_policy

    run_id = given_run or new_run_id()
    shown = RunOutput(run_id, terminal=terminal, progress=progress, run_wait=ask_wait(settings))
    request = RunRequest(prepared, settings, task or "", run_id, shown.asker, params=parse_assignments(params),
                         cli_agent=runtime, observer=shown.observer, warn=shown.warn, env_policy=env_policy(settings),
                         tmux=session_name(run_id) if given_run is not None and not headless else "",
                         attach=terminal and not task)
    shown.ended(where.run(request, lambda place: shown.started_at(run_id, prepared.role, place)), as_json=as_json)


def _wants_tmux(attach_mode: str | None, task: str | None, terminal: bool) -> bool:
    """tmux when asked, or by default for an interactive run when tmux is on PATH; exit 2 when it cannot be."""
    from orchestrator.tmux import tmux_path
    from strawpot.commands._interactive import can_attach
    from strawpot.model.errors import UsageError

    if attach_mode == "tmux":
        if tmux_path() is None:
            raise UsageError("--attach tmux: tmux is not on PATH",
                             hint="install tmux (e.g. `apt-get install tmux`), or pass --attach direct")
        if not (terminal and can_attach()):
            raise UsageError("--attach tmux needs a terminal to attach to", hint="pass --headless --task TEXT")
        return True
    return attach_mode is None and not task and terminal and can_attach() and tmux_path() is not None


def _start_in_tmux(prepared: Prepared, run_id: str, role: str | None, runtime: str | None, task: str | None,
                   params: tuple[str, ...], progress: str, flags: tuple[str, ...] = ()) -> int:
    """Run this same `start` inside a new tmux session and attach this terminal to it."""
    from orchestrator.tmux import TmuxSession
    from strawpot.commands._interactive import attach_and_report

    argv = [sys.executable, "-P", "-m", "strawpot.cli", "start", "--attach", "direct", "--run-id", run_id,
            "--project", str(prepared.project.dir), "--role", prepared.role, "--progress", progress, *flags]
    for flag, value in (("--runtime", runtime), ("--task", task)):
        if value:
            argv += [flag, value]
    for item in params:
        argv += ["--param", item]
    tmux = TmuxSession(run_id)
    tmux.start(argv, prepared.project.dir)
    return attach_and_report(prepared.project, run_id, tmux)
