"""`strawpot doctor`: check that every locked agent can run here, and name the fix for each problem."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import json_option, print_json, project_option

SECTION = "sessions"


@click.command()
@project_option
@json_option
def command(project: Path | None, as_json: bool) -> None:
    """Check each agent of strawpot.lock: wrapper present and built, tools on PATH, required env vars set.

    Exits 7 when any agent has a problem (each printed with its fix), 0 otherwise.
    """
    import os

    from orchestrator.binding import Binder
    from orchestrator.doctor import check_agents
    from orchestrator.envvars import EnvValues
    from orchestrator.staging import Stager
    from strawpot.model.installed import InstalledTree
    from strawpot.model.layout import Project
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.manifest import Manifest
    from strawpot.settings import config_path, load_settings

    the_project = Project.at(project)
    stager = Stager(InstalledTree(the_project.tree_root), Lockfile.load(the_project.lock_path))
    settings = load_settings(the_project)
    binder = Binder(stager, Manifest.load(the_project.manifest_path), settings)
    env = EnvValues(os.environ, settings.saved_env())
    reports = check_agents(binder, env, str(config_path()))
    problems = sum(len(r.problems) for r in reports)
    if as_json:
        print_json({"ok": problems == 0, "agents": [r.to_dict() for r in reports]})
    else:
        if not reports:
            click.echo("no agents in strawpot.lock", err=True)
        for r in reports:
            click.echo(f"{'ok ' if not r.problems else 'BAD'} agent {r.agent} {r.version}")
            for p in r.problems:
                click.echo(f"    problem: {p.what}\n    fix:     {p.fix}" if p.fix else f"    problem: {p.what}")
            for hint in r.hints:
                click.echo(f"    hint:    {hint}")
    if problems:
        raise SystemExit(7)
