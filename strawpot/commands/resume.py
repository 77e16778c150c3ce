"""`strawpot resume RUN_ID [--agent ID] [--task TEXT]`: continue a paused (or ended) agent's conversation."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_run_id
from strawpot.commands._options import json_option, project_option

SECTION = "sessions"


@click.command()
@click.argument("run_id", shell_complete=complete_run_id)
@click.option("--agent", "agent_id", metavar="ID", help="The agent to resume (default: the run's orchestrator).")
@click.option("--task", metavar="TEXT", help="What to tell the resumed agent; without it, it is interactive.")
@click.option("--headless", is_flag=True, help="No terminal: ask_user gets defaults (or waits in the run folder: "
              "[session] ask); needs --task.")
@project_option
@json_option
def command(run_id: str, agent_id: str | None, task: str | None, headless: bool, project: Path | None,
            as_json: bool) -> None:
    """Resume an agent of an ended run: its wrapper's `build` gets `--resume <session id>`.

    Only agents whose AGENT.md declares `metadata.strawpot.session: {resume: true}` have a session id (exit 2
    otherwise). The agent runs in its old workspace, in the run's worktree when it had one, and a succeeded
    run is merged back as `start` would. Refuses (exit 4) when strawpot.lock differs from the one the run
    started with, naming what changed.
    """
    from orchestrator.launch import Launch, missing_env_error, prepare
    from orchestrator.run_control import remote_node, resume
    from strawpot.commands._interactive import on_terminal
    from strawpot.commands._run_output import RunOutput
    from strawpot.config_files import ask_wait, env_policy, load_settings
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project

    the_project = Project.at(project)
    target = resume(the_project, run_id, agent_id)
    terminal = not headless and on_terminal()
    if not task and not terminal:
        raise UsageError("no --task and no terminal: there is no one to talk to the resumed agent",
                         hint="pass --task TEXT")
    # the run keeps the isolation it was started with; the settings' isolation is not checked again
    settings = load_settings(the_project, {"session.isolation": ("resume", "none")})
    prepared = prepare(the_project, settings, role=target.record.role, saved_env=settings.saved_env())
    if missing := prepared.missing_env():
        raise missing_env_error(missing)
    shown = RunOutput(run_id, terminal=terminal, progress="text", run_wait=ask_wait(settings))
    if target.record.runner.get("kind", "local") != "local":  # resumed here, never on the cluster it ran on
        shown.warn(f"run {run_id} ran on {remote_node(target.record)} and goes on here, in its worktree and the "
                   "workspaces that came back; an agent CLI that keeps its conversation outside its workspace (in "
                   "the home folder) kept it on that node")
    launch = Launch.resume(prepared, run_id, asker=shown.asker, observer=shown.observer, warn=shown.warn,
                           env_policy=env_policy(settings))
    shown.started(launch)
    shown.ended(launch.run_to_end(task or "", attach=terminal and not task, agent=target.agent.agent_id),
                as_json=as_json)
