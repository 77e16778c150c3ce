"""`strawpot install [KIND SLUG[SPEC]]...`: resolve, lock and install packages (bare: make the tree equal the lock)."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_pair_kind
from strawpot.commands._options import (
    ignore_scripts_option,
    lock_mode_options,
    registry_project_options,
    trust_project_option,
)
from strawpot.install.options import LockMode

SECTION = "packages"


@click.command()
@click.argument("packages", nargs=-1, metavar="[KIND SLUG[SPEC]]...", shell_complete=complete_pair_kind)
@registry_project_options
@lock_mode_options
@ignore_scripts_option
@trust_project_option
@click.option("--yes", "-y", is_flag=True,
              help="Answer yes to questions; never to trusting an install script or a tool's install command.")
@click.option("--install-tools", is_flag=True,
              help="Run the install commands of missing agent tools, for agents you trusted (`strawpot trust`).")
@click.option("--no-save", is_flag=True, help="Install without writing strawpot.toml or strawpot.lock.")
def command(
    packages: tuple[str, ...], is_global: bool, project: Path | None, registry: str | None, as_json: bool,
    lock: LockMode, offline: bool, dry_run: bool, ignore_scripts: bool, trust_project: bool, yes: bool,
    install_tools: bool, skip_tools: bool, no_save: bool,
) -> None:
    """Install packages and their dependencies, and record them in strawpot.toml and strawpot.lock.

    With no arguments, make the installed tree equal strawpot.lock, resolving first only when
    strawpot.toml changed. KIND is skill, role, agent, memory or integration; SPEC is optional
    (`reviewer`, `reviewer@^1.2`, `'reviewer>=1,<2'`); without one, `^X.Y.Z` of the installed
    version is saved.
    """
    import time

    from strawpot.commands._install_output import RichReporter, parse_packages, render_outcome
    from strawpot.config_files import Project
    from strawpot.install.options import Edit, Options
    from strawpot.install.service import run

    started = time.perf_counter()
    edit = Edit(add=tuple(parse_packages(packages)))
    options = Options.for_install(registry=registry, offline=offline, lock=lock, dry_run=dry_run, no_save=no_save,
                                  ignore_scripts=ignore_scripts, install_tools=install_tools, skip_tools=skip_tools,
                                  trust_project=trust_project)
    the_project = Project.at(project, is_global=is_global)
    new = not is_global and not the_project.exists
    if new and not packages:
        from strawpot.model.errors import UsageError

        where = the_project.dir if project is not None else f"{the_project.dir} or any folder above it"
        raise UsageError(f"no strawpot.toml or strawpot.lock in {where}: nothing to install",
                         hint="install a package (`strawpot install KIND SLUG`) or create the file (`strawpot init`)")
    outcome = run(the_project, edit, options, reporter=RichReporter(quiet=as_json))
    if new and project is None and outcome.manifest_written:  # said once it happened: a failed install makes none
        import sys

        sys.stderr.write(f"note: no strawpot.toml in {the_project.dir} or any folder above it, so this is a new "
                         "project (choose another folder with --project DIR)\n")
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "install", **outcome.as_dict()})
    else:
        render_outcome(outcome, started=started)
