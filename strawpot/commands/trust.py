"""`strawpot trust KIND:SLUG...`: let packages' install scripts run, then run the pending ones."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import existing_project, registry_project_options

SECTION = "packages"


@click.command()
@click.argument("packages", nargs=-1, required=True, metavar="KIND:SLUG...")
@registry_project_options
def command(packages: tuple[str, ...], is_global: bool, project: Path | None, registry: str | None,
            as_json: bool) -> None:
    """Record KIND:SLUG (e.g. agent:my-agent) in [scripts] trusted of strawpot.toml, confirm its install script
    and tool install commands on this machine (pinned by sha256 in strawpot.lock: a changed one is asked about
    again), then build every installed package whose trusted install script has not run yet.

    Read a script first with `strawpot info KIND SLUG`: it runs as you, in the package folder.
    """
    import time

    from strawpot.commands._install_output import RichReporter, render_outcome
    from strawpot.commands._options import parse_user_id
    from strawpot.install.options import Options
    from strawpot.install.service import run
    from strawpot.model.fs import file_lock
    from strawpot.model.ids import package_id
    from strawpot.model.manifest import Manifest

    ids = [package_id(*parse_user_id(text)) for text in packages]
    started = time.perf_counter()
    the_project = existing_project(project, is_global=is_global)
    with file_lock(the_project.lock_file_path):
        manifest = Manifest.load(the_project.manifest_path)
        added = manifest.trust(ids)
        if added:
            manifest.save()
    reporter = RichReporter(quiet=as_json)
    for pid in dict.fromkeys(ids):
        reporter.status(f"Trusted {pid} in {the_project.manifest_path.name}" if pid in added
                        else f"{pid} is already trusted in {the_project.manifest_path.name}")
    outcome = run(the_project, None, Options(registry=registry, tools="skip", trust_now=frozenset(ids)),
                  reporter=reporter)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "trust", "trusted": added, **outcome.as_dict()})
    else:
        render_outcome(outcome, started=started)
