"""`strawpot start`: verify the locked environment, start Denden, run the orchestrator role to its end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import rich_click as click

from strawpot.commands._options import json_option, print_json, project_option

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
@project_option
@json_option
def command(role: str | None, runtime: str | None, task: str | None, headless: bool,
            project: Path | None, as_json: bool) -> None:
    """Start the orchestrator role from the verified, locked environment and wait for it.

    Refuses (exit 5) when the installed packages differ from strawpot.lock, and (exit 7) when an
    agent's tools or required environment variables are missing, before anything is spawned.
    Exits with the orchestrator agent's exit code; Ctrl-C stops every agent it started.
    """
    import signal

    from rich.console import Console

    from orchestrator.ask import Asker
    from orchestrator.binding import BindingError
    from orchestrator.launch import Launch, prepare
    from orchestrator.runtime import RuntimeFailure
    from orchestrator.staging import StagingError
    from strawpot.model.errors import StrawpotError, UsageError
    from strawpot.model.layout import Project

    if headless and not task:
        raise UsageError("--headless needs --task (there is no one to talk to the agent)")
    err = Console(stderr=True)
    interactive = not headless and sys.stdin.isatty()
    prepared = prepare(Project.at(project), role=role, cli_agent=runtime)
    asker = Asker(_prompt if interactive else None, write=lambda text: print(text, end="", file=sys.stderr))
    launch = Launch(prepared, task=task or "", asker=asker)
    err.print(f"run {launch.session.run_id}: role {prepared.role}, Denden on {launch.server.address}",
              highlight=False)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        root = launch.start_root(task or "", attach=interactive and not task)
        done = launch.wait_root(root)
    except KeyboardInterrupt:
        stopped = launch.close("interrupted", 130)
        err.print(f"interrupted: stopped {len(stopped)} agent(s)", highlight=False)
        raise SystemExit(130) from None
    except (StagingError, RuntimeFailure, BindingError) as exc:
        launch.close("failed", None)
        raise StrawpotError(f"could not start role {prepared.role}: {exc}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    launch.close(done.state, done.exit_code)
    code = done.exit_code if done.exit_code is not None else 1
    if as_json:
        print_json({"run_id": launch.session.run_id, "role": prepared.role, "state": done.state,
                    "exit_code": code, "result": done.output})
    elif done.output:
        click.echo(done.output)
    err.print(f"run {launch.session.run_id} {done.state} (exit code {code})", highlight=False)
    if code:
        raise SystemExit(code)
