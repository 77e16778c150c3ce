"""`strawpot lock [--check]`: resolve strawpot.toml and write strawpot.lock, installing nothing."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import registry_project_options

SECTION = "packages"


@click.command()
@registry_project_options
@click.option("--check", is_flag=True, help="Exit 4 if strawpot.lock is out of date with strawpot.toml; change nothing.")
@click.option("--offline", is_flag=True, help="Resolve from cached metadata only.")
def command(
    is_global: bool, project: Path | None, registry: str | None, as_json: bool, check: bool, offline: bool,
) -> None:
    """Resolve the requirements in strawpot.toml and write strawpot.lock (locked versions are kept)."""
    if not as_json:
        import sys

        from strawpot.install.fastcheck import lock_current

        count = lock_current(project, is_global)
        if count is not None:
            sys.stderr.write(f"strawpot.lock is up to date ({count} packages)\n")
            return
    from strawpot.commands._install_output import RichReporter
    from strawpot.install.options import LockMode, Options, TreeMode
    from strawpot.install.service import run
    from strawpot.model.errors import LockOutdated
    from strawpot.settings import Project

    the_project = Project.at(project, is_global=is_global)
    options = Options(registry=registry, offline=offline, lock=LockMode.CHECK if check else LockMode.RESOLVE,
                      tree=TreeMode.NONE, tools="skip")
    outcome = run(the_project, None, options, reporter=RichReporter(quiet=as_json or check))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "lock", "check": check, "stale": outcome.stale, **outcome.as_dict()})
    if check and outcome.stale:
        raise LockOutdated(
            f"{the_project.lock_path} is out of date with {the_project.manifest_path.name}",
            hint="run `strawpot lock` and commit the result",
        )
    if not as_json:
        from strawpot.console import err_console

        count = len(outcome.lock.packages) if outcome.lock else 0
        if check:
            err_console.print(f"{the_project.lock_path.name} is up to date ({count} packages)", markup=False)
        elif outcome.lock_written:
            err_console.print(f"Wrote {the_project.lock_path.name} ({count} packages)", markup=False)
        else:
            err_console.print(f"{the_project.lock_path.name} is up to date ({count} packages)", markup=False)
