"""`strawpot list [KIND]`: installed packages (or, with --remote, the registry's)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._complete import complete_kind
from strawpot.commands._options import registry_project_options

if TYPE_CHECKING:
    from strawpot.config_files import Project
    from strawpot.model.kinds import Kind

SECTION = "packages"


@click.command(name="list")
@click.argument("kind", required=False, shell_complete=complete_kind)
@click.option("--remote", is_flag=True, help="List the registry's packages instead of the installed ones.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200), help="With --remote: at most this many per kind.")
@registry_project_options
def command(
    kind: str | None, remote: bool, limit: int, is_global: bool, project: Path | None,
    registry: str | None, as_json: bool,
) -> None:
    """List installed packages with their versions and whether they match strawpot.lock."""
    if not remote:
        from strawpot.commands._read_only import installed

        installed(kind, is_global, project, as_json)
        return
    from strawpot.commands._read_only import parse_kind
    from strawpot.config_files import Project
    from strawpot.model.kinds import KIND_ORDER

    kinds = [parse_kind(kind)] if kind else list(KIND_ORDER)
    rows = _remote(Project.at(project, is_global=is_global), kinds, registry, limit)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "list", "remote": remote, "packages": rows})
        return
    if not rows:
        from strawpot.console import err_console

        err_console.line("No packages")
        return
    from strawpot.commands._read_only import print_table

    columns = ("kind", "name", "summary")
    print_table(columns, [[str(row.get(c) or "") for c in columns] for row in rows], pad_edge=False)


def _remote(project: Project, kinds: list[Kind], registry: str | None, limit: int) -> list[dict[str, object]]:
    from strawpot.hub import hub_errors, open_client
    from strawpot.registry_choice import choose_registry

    chosen = choose_registry(project, registry)
    url = chosen.url
    rows: list[dict[str, object]] = []
    with hub_errors(url), open_client(chosen) as client:
        for kind in kinds:
            for item in client.list_packages(kind.value, limit=limit).get("items", []):
                rows.append({"kind": kind.value, "name": item.get("slug"), "summary": item.get("summary"),
                             "downloads": (item.get("stats") or {}).get("downloads")})
    return rows
