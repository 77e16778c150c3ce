"""`strawpot audit`: what is known to be wrong with the locked versions (yanked, advised, too young, unsigned...)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._options import registry_project_options
from strawpot.model.advisory import SEVERITIES

if TYPE_CHECKING:
    from strawpot.install.audit import Finding

SECTION = "packages"


@click.command(short_help="Report locked versions that were yanked, that an advisory names, that are younger "
                          "than [install] min_release_age, or that are unsigned or signed by another publisher.")
@registry_project_options
@click.option("--fail-on", type=click.Choice(SEVERITIES), default="high", show_default=True,
              help="Exit 1 when a finding is this severe or more (a yanked version counts as high).")
def command(is_global: bool, project: Path | None, registry: str | None, as_json: bool, fail_on: str) -> None:
    """Report the locked packages' versions that were yanked, that an advisory of the registry names, that are
    younger than [install] min_release_age, that are unsigned, or whose signer is not the one of the version before;
    exit 1 when one is as severe as --fail-on or more.

    Asks the registry strawpot.lock's packages came from (exit 6 when it cannot be reached)."""
    from hub_client import NotFound, PackageVersions
    from strawpot.commands._read_only import note_stale_lock
    from strawpot.config_files import load_settings
    from strawpot.hub import hub_errors, open_client
    from strawpot.install.audit import Facts, audit, read_advisories, registry_packages
    from strawpot.install.cooldown import cooldown
    from strawpot.install.queries import locked_project
    from strawpot.model.errors import StrawpotError
    from strawpot.registry_choice import choose_registry

    the_project, lock = locked_project(project, is_global)
    note_stale_lock(the_project, lock)
    packages = registry_packages(lock)
    settings = load_settings(the_project, {"registry.url": ("--registry", registry)})
    min_age_text, min_age = cooldown(settings)
    chosen = choose_registry(the_project, registry, packages[0].source if packages else None, settings=settings)
    with hub_errors(chosen.url), open_client(chosen) as client:
        found = client.package_versions_many((p.kind.value, p.name) for p in packages)
        for result in found.values():
            if not isinstance(result, (PackageVersions, NotFound)):
                raise result  # an unreachable registry is an error, never "nothing found"
        try:
            answer: object = client.advisories()
        except NotFound:  # a registry without the extension (StrawHub): nothing to compare with, and said
            answer = None
    try:
        advice, unreadable = read_advisories(answer) if answer is not None else ([], 0)
    except ValueError as exc:
        raise StrawpotError(f"{chosen.url}: {exc}", hint="report it to the registry's operator") from None
    versions = {p.key: result for p in packages
                if isinstance(result := found[(p.kind.value, p.name)], PackageVersions)}
    findings = audit(Facts(packages, versions, advice, min_age, min_age_text))
    failing = [f for f in findings if SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on)]
    notes = ([f"{chosen.url} publishes no advisories (no GET /api/v1/advisories)"] if answer is None else []) + (
        [f"{unreadable} advisories from {chosen.url} could not be read and were left out"] if unreadable else [])
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "audit", "registry": chosen.url, "packages": len(packages), "fail_on": fail_on,
                    "min_release_age": min_age_text or None, "advisories_checked": answer is not None,
                    "findings": [f.as_dict() for f in findings], "failing": len(failing), "notes": notes})
    else:
        _render(findings, len(packages), fail_on, notes)
    if failing:
        from click.exceptions import Exit

        raise Exit(1)


def _render(findings: list[Finding], total: int, fail_on: str, notes: list[str]) -> None:
    from strawpot.console import err_console, out_console
    from strawpot.model.plural import count

    for note in notes:
        err_console.print(f"note: {note}", markup=False)
    if not findings:
        err_console.print(f"No findings in {count(total, 'locked package')}", markup=False)
        return
    for f in findings:
        out_console.print(f"{f.severity:<8} {f.kind.value} {f.name} {f.version}  {f.problem}: {f.summary}",
                          markup=False, highlight=False, soft_wrap=True)
    worst = sum(1 for f in findings if SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on))
    err_console.print(f"{count(len(findings), 'finding')} in {count(total, 'locked package')}; {worst} at "
                      f"{fail_on} or above", markup=False)
