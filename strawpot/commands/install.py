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
    from strawpot.commands._install_run import install

    install(packages, is_global, project, registry, as_json, lock, offline=offline, dry_run=dry_run,
            ignore_scripts=ignore_scripts, trust_project=trust_project, install_tools=install_tools,
            skip_tools=skip_tools, no_save=no_save)
