"""`strawpot start`: verify the locked environment, start Denden, run the orchestrator role to its end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._options import json_option, print_json, project_option

if TYPE_CHECKING:
    from orchestrator.launch import Prepared

SECTION = "sessions"


def _prompt(message: str) -> str:
    sys.stderr.write(message)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@click.command()
@click.option("--role", metavar="ROLE", help="Role to start (default: [orchestrator].role).")
@click.option("--runtime", metavar="AGENT", help="Agent that plays every role (overrides all other bindings).")
@click.option("--task", metavar="TEXT", help="Task for the orchestrator role; without it the agent is interactive.")
@click.option("--headless", is_flag=True, help="No terminal: ask_user gets defaults; needs --task.")
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
@click.option("--run-id", "tmux_run", hidden=True, default=None)  # the run inside tmux, started by the outer start
@project_option
@json_option
def command(role: str | None, runtime: str | None, task: str | None, headless: bool, params: tuple[str, ...],
            attach_mode: str | None, progress: str, isolation: str | None, merge: str | None, sandbox: str | None,
            tmux_run: str | None, project: Path | None, as_json: bool) -> None:
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
    from strawpot.model.layout import Project
    from strawpot.model.params import parse_assignments

    if headless and not task:
        raise UsageError("--headless needs --task (there is no one to talk to the agent)")
    terminal = not headless and on_terminal()
    if not task and not terminal:
        raise UsageError("no --task and no terminal: there is no one to talk to the orchestrator",
                         hint="pass --task TEXT (with --headless for unattended runs), or run on a terminal")
    if tmux_run is not None and not RUN_ID_RE.fullmatch(tmux_run):
        raise UsageError(f"--run-id {tmux_run!r} is not a run id")
    in_tmux = _wants_tmux(attach_mode, task, terminal) and tmux_run is None
    from strawpot.config_files import load_settings

    the_project = Project.at(project)
    settings = load_settings(the_project, {"session.isolation": ("--isolation", isolation),
                                           "session.merge": ("--merge", merge),
                                           "session.sandbox": ("--sandbox", sandbox)})
    prepared = prepare(the_project, settings, role=role, cli_agent=runtime, params=parse_assignments(params),
                       saved_env=settings.saved_env())
    if missing := prepared.missing_env():
        if not terminal:
            raise missing_env_error(missing)
        if not in_tmux:  # in tmux the run's own start asks, on the session's terminal: no secret crosses over
            ask_for_env(prepared, missing)
    if in_tmux:
        flags = ("--isolation", settings.get("session.isolation"), "--merge", settings.get("session.merge"),
                 "--sandbox", settings.get("session.sandbox"))
        raise SystemExit(_start_in_tmux(prepared, new_run_id(), role, runtime, task, (*params,), progress, flags))
    _run(prepared, tmux_run or new_run_id(), task, terminal=terminal, in_tmux=tmux_run is not None,
         progress=progress, as_json=as_json)


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

    argv = [sys.executable, "-m", "strawpot.cli", "start", "--attach", "direct", "--run-id", run_id,
            "--project", str(prepared.project.dir), "--role", prepared.role, "--progress", progress, *flags]
    for flag, value in (("--runtime", runtime), ("--task", task)):
        if value:
            argv += [flag, value]
    for item in params:
        argv += ["--param", item]
    tmux = TmuxSession(run_id)
    tmux.start(argv, prepared.project.dir)
    return attach_and_report(prepared.project, run_id, tmux)


def _run(prepared: Prepared, run_id: str, task: str | None, *, terminal: bool, in_tmux: bool, progress: str,
         as_json: bool, resume_agent: str | None = None) -> None:
    """The run itself, in this process: Denden server, the orchestrator agent, every delegation, to the end.

    With `resume_agent`, the ended run `run_id` runs again: that agent continues its conversation.
    """
    import signal

    from orchestrator.ask import Asker
    from orchestrator.binding import BindingError
    from orchestrator.launch import Launch
    from orchestrator.progress import JsonProgress
    from orchestrator.runtime import RuntimeFailure
    from orchestrator.session import INTERRUPTED, STOPPED_EXIT_CODE, State
    from orchestrator.staging import StagingError
    from orchestrator.tmux import forget_own_socket, session_name
    from strawpot.commands._interactive import exit_code_of
    from strawpot.config_files import env_policy, load_settings
    from strawpot.console import new_console
    from strawpot.model.errors import StrawpotError
    from strawpot.model.plural import count

    err = new_console(stderr=True, quiet=progress == "json")
    asker = Asker(_prompt if terminal else None, write=lambda text: print(text, end="", file=sys.stderr))
    observer = JsonProgress(sys.stderr, run_id) if progress == "json" else None
    launch = Launch(prepared, task=task or "", asker=asker, run_id=run_id,
                    tmux=session_name(run_id) if in_tmux else "", observer=observer, reopen=resume_agent is not None,
                    env_policy=env_policy(load_settings(prepared.project)))
    err.print(f"run {run_id}: role {prepared.role}, Denden on {launch.server.address}", highlight=False)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        attach = terminal and not task
        root = (launch.resume_agent(resume_agent, task or "", attach=attach) if resume_agent
                else launch.start_root(task or "", attach=attach))
        done = launch.wait_root(root)
    except KeyboardInterrupt:
        stopped = launch.close(INTERRUPTED, STOPPED_EXIT_CODE)
        err.print(f"interrupted: stopped {count(len(stopped), 'agent')}", highlight=False)
        if launch.merged.message:
            err.print(launch.merged.message, highlight=False, soft_wrap=True)
        raise SystemExit(STOPPED_EXIT_CODE) from None
    except (StagingError, RuntimeFailure, BindingError) as exc:
        launch.close(State.FAILED, None)
        raise StrawpotError(f"could not start role {prepared.role}: {exc}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        if in_tmux:
            forget_own_socket()
    launch.close(done.state, done.exit_code)
    state = launch.session.state  # `failed` when the merge-back itself broke
    code = exit_code_of(state, done.exit_code) or (1 if state == State.FAILED else 0)
    if launch.merged.message:
        err.print(launch.merged.message, highlight=False, soft_wrap=True)
    if as_json:
        print_json({"run_id": run_id, "role": prepared.role, "state": state,
                    "exit_code": code, "result": done.output})
    elif done.output:
        click.echo(done.output)
    err.print(f"run {run_id} {state} (exit code {code})", highlight=False)
    if done.state == State.PAUSED:
        err.print(f"continue it with `strawpot resume {run_id}`", highlight=False)
    if launch.merged.error is not None:
        raise launch.merged.error
    if code:
        raise SystemExit(code)
