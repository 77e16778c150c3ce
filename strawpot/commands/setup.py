"""`strawpot setup AGENT`: run the agent wrapper's interactive one-time `setup` (e.g. a login) on this terminal."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import project_option

SECTION = "sessions"


@click.command()
@click.argument("agent")
@project_option
def command(agent: str, project: Path | None) -> None:
    """Run `<wrapper> setup` of the locked AGENT with this terminal's input and output; exits with its code.

    Exits 7 when the agent is not installed or its wrapper is not built (naming the fix).
    """
    import os

    from orchestrator.binding import Binder, BindingError
    from orchestrator.envvars import EnvValues, package_needs
    from orchestrator.staging import Stager, StagingError
    from strawpot.config_files import env_policy, load_settings
    from strawpot.model.child_env import child_env
    from strawpot.model.errors import MissingToolError
    from strawpot.model.installed import InstalledTree
    from strawpot.model.kinds import Kind
    from strawpot.model.layout import Project
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.manifest import Manifest

    the_project = Project.at(project)
    settings = load_settings(the_project)
    stager = Stager(InstalledTree(the_project.tree_root), Lockfile.load(the_project.lock_path),
                    settings.get("session.always_stage"))
    binder = Binder(stager, Manifest.load(the_project.manifest_path), settings)
    try:
        runtime = binder.runtime(agent)
        package = stager.package(Kind.AGENT, agent)
    except (BindingError, StagingError) as exc:
        raise MissingToolError(str(exc), hint=f"install it with `strawpot install agent {agent}`") from None
    if problem := binder.wrapper_problem(agent, runtime.wrapper):
        raise MissingToolError(str(problem))
    env = EnvValues(os.environ, settings.saved_env())
    extra = env.exported(package_needs(Kind.AGENT, agent, package.env))
    try:
        code = runtime.setup(child_env(os.environ, env_policy(settings), declared=extra), the_project.dir)
    except OSError as exc:
        raise MissingToolError(f"agent {agent}: cannot run {runtime.wrapper}: {exc.strerror or exc}") from None
    raise SystemExit(code)
