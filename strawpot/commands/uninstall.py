"""`strawpot uninstall KIND SLUG...`: drop packages from strawpot.toml, re-lock, and remove orphans."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_pair_kind
from strawpot.commands._options import registry_project_options

SECTION = "packages"


@click.command()
@click.argument("packages", nargs=-1, required=True, metavar="KIND SLUG...", shell_complete=complete_pair_kind)
@registry_project_options
@click.option("--offline", is_flag=True, help="Resolve from cached metadata only.")
@click.option("--dry-run", is_flag=True, help="Show what would be removed; write nothing.")
def command(
    packages: tuple[str, ...], is_global: bool, project: Path | None, registry: str | None, as_json: bool,
    offline: bool, dry_run: bool,
) -> None:
    """Remove packages from strawpot.toml, update strawpot.lock, and delete what nothing needs any more."""
    import time

    from strawpot.commands._install_output import RichReporter, parse_packages, render_outcome
    from strawpot.config_files import Project
    from strawpot.install.options import Edit, Options
    from strawpot.install.service import run

    started = time.perf_counter()
    edit = Edit(remove=tuple((r.kind, r.name) for r in parse_packages(packages, command="uninstall")))
    options = Options(registry=registry, offline=offline, dry_run=dry_run, tools="skip")
    outcome = run(Project.at(project, is_global=is_global), edit, options, reporter=RichReporter(quiet=as_json))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "uninstall", **outcome.as_dict()})
    else:
        render_outcome(outcome, started=started, verb="Uninstalled")
