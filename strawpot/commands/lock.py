"""`strawpot lock [--check]`: resolve strawpot.toml and write strawpot.lock, installing nothing."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import existing_project, registry_project_options
from strawpot.model import plural

SECTION = "packages"


@click.command()
@registry_project_options
@click.option("--check", is_flag=True, help="Exit 4 if strawpot.lock is out of date with strawpot.toml; change nothing.")
@click.option("--offline", is_flag=True, help="Resolve from cached metadata only.")
@click.option("--dry-run", is_flag=True, help="Resolve and show whether strawpot.lock would change; write nothing.")
def command(
    is_global: bool, project: Path | None, registry: str | None, as_json: bool, check: bool, offline: bool,
    dry_run: bool,
) -> None:
    """Resolve the requirements in strawpot.toml and write strawpot.lock (locked versions are kept)."""
    from strawpot.install.fastcheck import first_step
    from strawpot.install.options import LockMode, Options, TreeMode

    the_project = existing_project(project, is_global=is_global)
    options = Options(registry=registry, offline=offline, lock=LockMode.CHECK if check else LockMode.RESOLVE,
                      tree=TreeMode.NONE, tools="skip", dry_run=dry_run)
    if not as_json and (current := first_step(the_project, None, options)) is not None:
        import sys  # the pipeline's first step answered: neither it nor rich is imported

        sys.stderr.write(f"{the_project.lock_path.name} is up to date ({plural.count(current, 'package')})\n")
        return
    from strawpot.commands._install_output import RichReporter
    from strawpot.install.service import run
    from strawpot.model.errors import LockOutdated

    outcome = run(the_project, None, options, reporter=RichReporter(quiet=as_json or check))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "lock", "check": check, "stale": outcome.stale, **outcome.as_dict()})
    if check and outcome.stale:
        raise LockOutdated(
            f"{the_project.lock_path} is out of date with {the_project.manifest_path.name}{outcome.stale_because}",
            hint="run `strawpot lock` and commit the result",
        )
    if not as_json:
        from strawpot.console import err_console

        packages = plural.count(len(outcome.lock.packages) if outcome.lock else 0, "package")
        if dry_run:
            err_console.print(f"Would {'write' if outcome.lock_changed else 'keep'} {the_project.lock_path.name} "
                              f"({packages})", markup=False)
        elif check:
            err_console.print(f"{the_project.lock_path.name} is up to date ({packages})", markup=False)
        elif outcome.lock_written:
            err_console.print(f"Wrote {the_project.lock_path.name} ({packages})", markup=False)
        else:
            err_console.print(f"{the_project.lock_path.name} is up to date ({packages})", markup=False)
        for move in outcome.moved:  # a lock made against another registry than the one before
            err_console.print(move.line(), markup=False)
        from strawpot.commands._install_output import render_cooldown

        render_cooldown(outcome)
