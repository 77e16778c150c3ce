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
    from strawpot.commands._install_output import parse_kind
    from strawpot.config_files import Project
    from strawpot.model.kinds import KIND_ORDER

    kinds = [parse_kind(kind)] if kind else list(KIND_ORDER)
    the_project = Project.at(project, is_global=is_global)
    rows = _remote(the_project, kinds, registry, limit) if remote else _installed(the_project, kinds)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "list", "remote": remote, "packages": rows})
        return
    from strawpot.console import err_console, out_console

    if not rows:
        err_console.print("No packages" + ("" if remote else f" installed in {the_project.tree_root}"), markup=False)
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    columns = ("kind", "name", "summary") if remote else ("kind", "name", "version", "status")
    for column in columns:
        table.add_column(column)
    from strawpot.model.display import terminal_safe

    for row in rows:
        table.add_row(*(terminal_safe(str(row.get(c) or "")) for c in columns))
    out_console.print(table)


def _installed(project: Project, kinds: list[Kind]) -> list[dict[str, object]]:
    from strawpot.model.installed import InstalledTree
    from strawpot.model.lockfile import Lockfile

    lock = Lockfile.load(project.lock_path) if project.lock_path.exists() else None
    if lock is not None:
        from strawpot.commands._install_output import note_stale_lock

        note_stale_lock(project, lock)
    rows: list[dict[str, object]] = []
    for pkg in InstalledTree(project.tree_root).packages():
        if pkg.kind not in kinds:
            continue
        locked = lock.get(pkg.kind, pkg.name) if lock else None
        status = "not in lock" if locked is None else ("locked" if locked.version == pkg.version else f"lock has {locked.version}")
        rows.append({"kind": pkg.kind.value, "name": pkg.name, "version": pkg.version, "status": status})
    return rows


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
