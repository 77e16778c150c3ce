"""`strawpot update [KIND SLUG]... | --all`: move locked packages to the newest versions strawpot.toml allows."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_pair_kind
from strawpot.commands._options import existing_project, registry_project_options

SECTION = "packages"


@click.command()
@click.argument("packages", nargs=-1, metavar="[KIND SLUG[SPEC]]...", shell_complete=complete_pair_kind)
@click.option("--all", "update_all", is_flag=True, help="Update every package (the default with no arguments).")
@registry_project_options
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--skip-tools", is_flag=True, help="Do not check the system tools agents need.")
def command(
    packages: tuple[str, ...], update_all: bool, is_global: bool, project: Path | None, registry: str | None,
    as_json: bool, dry_run: bool, skip_tools: bool,
) -> None:
    """Update the named packages (or all) to the newest versions the specifiers in strawpot.toml allow.

    A SPEC (`skill alpha@^2`) replaces the package's specifier in strawpot.toml first.
    """
    import time

    from strawpot.commands._install_output import RichReporter, parse_packages, render_outcome
    from strawpot.install.options import Edit, Options
    from strawpot.install.queries import load_lock
    from strawpot.install.service import run
    from strawpot.model.errors import UsageError
    from strawpot.model.ids import package_id

    started = time.perf_counter()
    the_project = existing_project(project, is_global=is_global)
    if packages and update_all:
        raise UsageError("name packages or use --all, not both")
    named = parse_packages(packages, command="update")
    if named:
        lock = load_lock(the_project)
        for req in named:
            if lock.get(req.kind, req.name) is None:
                raise UsageError(f"{req.kind.value} {req.name} is not in {the_project.lock_path.name}",
                                 hint=f"install it with `strawpot install {req.kind.value} {req.name}`")
    # `update skill alpha@2` moves the requirement to the new specifier, as `install skill alpha@2` would
    respecified = tuple(r for r in named if r.spec is not None)
    edit = Edit(add=respecified, upgrade=frozenset(package_id(r.kind, r.name) for r in named),
                upgrade_all=not named)
    options = Options(registry=registry, dry_run=dry_run, tools="skip" if skip_tools else "check")
    outcome = run(the_project, edit, options, reporter=RichReporter(quiet=as_json))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "update", **outcome.as_dict()})
    else:
        render_outcome(outcome, started=started, verb="Updated")
