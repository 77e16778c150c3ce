"""`strawpot sync`: make the installed tree exactly strawpot.lock, removing what the lock does not hold."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import (
    existing_project,
    ignore_scripts_option,
    lock_mode_options,
    registry_project_options,
    trust_project_option,
)
from strawpot.install.options import LockMode

SECTION = "packages"


@click.command()
@registry_project_options
@lock_mode_options
@ignore_scripts_option
@trust_project_option
@click.option("--rebuild", "rebuild", multiple=True, metavar="KIND:SLUG",
              help="Reinstall this package from the lock and run its (trusted) install script again. Repeatable.")
def command(
    is_global: bool, project: Path | None, registry: str | None, as_json: bool,
    lock: LockMode, offline: bool, dry_run: bool, skip_tools: bool, ignore_scripts: bool, trust_project: bool, rebuild: tuple[str, ...],
) -> None:
    """Install exactly what strawpot.lock holds and remove every other installed package.

    Like a bare `strawpot install` (which re-locks first if strawpot.toml changed), except that
    packages installed by other means are removed too. `--rebuild agent:X` builds X again even when its
    files look right (a wrapper its script never built, say): what `strawpot doctor` suggests.
    """
    import time

    from strawpot.commands._install_output import RichReporter, render_outcome
    from strawpot.commands._options import parse_user_id
    from strawpot.install.options import Options, TreeMode
    from strawpot.install.service import run

    started = time.perf_counter()
    options = Options(
        registry=registry, offline=offline, lock=lock, tree=TreeMode.EXACT,
        dry_run=dry_run,
        scripts="ignore" if ignore_scripts else "run",
        tools="skip" if skip_tools else "check", trust_project=trust_project,
        rebuild=frozenset(parse_user_id(text) for text in rebuild),
    )
    outcome = run(existing_project(project, is_global=is_global), None, options, reporter=RichReporter(quiet=as_json))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "sync", **outcome.as_dict()})
    else:
        render_outcome(outcome, started=started, verb="Synced")
