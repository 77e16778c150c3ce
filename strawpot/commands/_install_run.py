"""What `strawpot install` does, for its click command and for the early answer (no click)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the early answer's path
if TYPE_CHECKING:
    from pathlib import Path

    from strawpot.install.options import LockMode


def install(packages: tuple[str, ...], is_global: bool, project: Path | None, registry: str | None, as_json: bool,
            lock: LockMode, *, offline: bool, dry_run: bool, ignore_scripts: bool, trust_project: bool,
            install_tools: bool, skip_tools: bool, no_save: bool) -> None:
    """Install `packages` (KIND SLUG[SPEC] pairs) and their dependencies, or with none make the tree equal the lock."""
    import time

    from strawpot.commands._install_output import RichReporter, parse_packages, render_outcome
    from strawpot.install.options import Edit, Options
    from strawpot.install.service import run
    from strawpot.model.layout import Project

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
        from strawpot.commands._json_report import print_json

        print_json(outcome.as_dict(), command="install")
    else:
        render_outcome(outcome, started=started)


def install_early(packages: tuple[str, ...] = (), is_global: bool = False, project: Path | None = None,
                  registry: str | None = None, as_json: bool = False, locked: bool = False, frozen: bool = False,
                  offline: bool = False, dry_run: bool = False, ignore_scripts: bool = False,
                  trust_project: bool = False, install_tools: bool = False, skip_tools: bool = False,
                  no_save: bool = False, yes: bool = False) -> None:
    """`install` as the early answer reads it: click's parameters by their names (--locked and --frozen apart)."""
    from strawpot.install.options import LockMode

    install(packages, is_global, project, registry, as_json, LockMode.from_flags(locked=locked, frozen=frozen),
            offline=offline, dry_run=dry_run, ignore_scripts=ignore_scripts, trust_project=trust_project,
            install_tools=install_tools, skip_tools=skip_tools, no_save=no_save)
