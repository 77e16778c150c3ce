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
    """Check each agent of strawpot.lock: wrapper present and built, tools on PATH, required env vars set; and
    whether the sandbox ([session] sandbox, [scripts] sandbox) works here; with [session] runner = "ray", whether
    the cluster answers and has room for a session now.

    Exits 7 when any agent has a problem, a sandbox that is asked for cannot work, or the Ray cluster does not
    answer or has no room (each printed with its fix), 0 otherwise.
    """
    import os

    from orchestrator.binding import DOCTOR_DOCS, Binder
    from orchestrator.confine import session_sandbox
    from orchestrator.doctor import check_agents, check_confined, check_runner, check_sandbox
    from orchestrator.envvars import EnvValues
    from orchestrator.staging import Stager
    from strawpot.config_files import config_path, load_settings
    from strawpot.model.installed import InstalledTree
    from strawpot.model.layout import Project
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.manifest import Manifest

    the_project = Project.at(project)
    settings = load_settings(the_project)
    stager = Stager(InstalledTree(the_project.tree_root), Lockfile.load(the_project.lock_path),
                    settings.get("session.always_stage"))
    binder = Binder(stager, Manifest.load(the_project.manifest_path), settings)
    env = EnvValues(os.environ, settings.saved_env())
    reports = check_agents(binder, env, str(config_path()))
    sandboxes = [check_sandbox(f"[{key.split('.')[0]}] sandbox", settings.get(key))
                 for key in ("session.sandbox", "scripts.sandbox")]
    confined = session_sandbox(settings)
    if confined.confined and sandboxes[0]["bwrap_works"]:
        check_confined(reports, binder, confined, the_project.dir, the_project.tree_root, os.environ)
    runner = check_runner(settings)
    problems = sum(len(r.problems) for r in reports) + sum(not s["ok"] for s in sandboxes + runner)
    if as_json:
        print_json({"ok": problems == 0, "agents": [r.to_dict() for r in reports], "sandbox": sandboxes,
                    "runner": runner})
    else:
        if not reports:
            click.echo("no agents in strawpot.lock", err=True)
        for r in reports:
            click.echo(f"{'ok ' if not r.problems else 'BAD'} agent {r.agent} {r.version}")
            for p in r.problems:
                click.echo(f"    problem: {p.what}\n    fix:     {p.fix or 'see ' + DOCTOR_DOCS}")
            for hint in r.hints:
                click.echo(f"    hint:    {hint}")
        for sb in sandboxes:
            state = "works here" if sb["bwrap_works"] else "does not work here"
            click.echo(f"{'ok ' if sb['ok'] else 'BAD'} sandbox {sb['setting']} = {sb['kind']!r}: bubblewrap {state}")
            if sb["problem"]:
                click.echo(f"    problem: {sb['problem']}\n    fix:     {sb['fix'] or 'see ' + DOCTOR_DOCS}")
        for check in runner:
            click.echo(f"{'ok ' if check['ok'] else 'BAD'} runner ray: {check['line']}")
            if check["fix"]:
                click.echo(f"    fix:     {check['fix']}")
    if problems:
        raise SystemExit(7)
