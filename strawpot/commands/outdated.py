"""`strawpot outdated`: locked versions against the newest allowed and the newest published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rich_click as click

from strawpot.commands._options import registry_project_options

SECTION = "packages"


@click.command()
@registry_project_options
@click.option("--all", "show_all", is_flag=True, help="List every locked package, not only the outdated ones.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when a package is outdated or yanked (for CI).")
def command(
    is_global: bool, project: Path | None, registry: str | None, as_json: bool, show_all: bool, exit_code: bool,
) -> None:
    """Compare each locked version with the newest that strawpot.toml allows and the newest published."""
    from hub_client import NotFound, PackageVersions
    from strawpot.hub import hub_errors, open_client
    from strawpot.install.queries import load_roots, locked_project, outdated, roots_of
    from strawpot.registry_choice import choose_registry

    the_project, lock = locked_project(project, is_global)
    from strawpot.commands._read_only import note_stale_lock

    note_stale_lock(the_project, lock)
    from strawpot.install.local import is_path_source
    from valueclass import replace

    lock = replace(lock, packages=tuple(p for p in lock.packages if not is_path_source(p)))  # from folders
    chosen = choose_registry(the_project, registry)
    url = chosen.url
    with hub_errors(url), open_client(chosen) as client:
        found = client.package_versions_many((p.kind.value, p.name) for p in lock.packages)
        for result in found.values():
            if not isinstance(result, (PackageVersions, NotFound)):
                raise result  # an unreachable registry is an error, never "all newest"
    available = {
        (p.kind, p.name): [(v.version, v.yanked) for v in result.versions]
        for p in lock.packages
        if isinstance(result := found[(p.kind.value, p.name)], PackageVersions)
    }
    rows = outdated(lock, roots_of(lock, load_roots(the_project.manifest_path)), available)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "outdated", "registry": url, "packages": [r.as_dict() for r in rows]})
        _exit_if_behind(exit_code, rows)
        return
    shown = [r for r in rows if show_all or r.behind]
    from strawpot.console import err_console, out_console

    if not shown:
        err_console.print(f"All {len(rows)} locked packages are the newest published versions", markup=False)
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("package", "locked", "allowed", "newest"):
        table.add_column(column)
    for row in shown:
        locked = f"{row.locked} (yanked)" if row.locked_yanked else row.locked
        table.add_row(f"{row.kind.value} {row.name}", locked, row.allowed or "-", row.newest or "-")
    out_console.print(table)
    if any(r.locked_yanked for r in shown):
        err_console.print("a locked version was yanked: `strawpot update KIND SLUG` moves it to an allowed one",
                          markup=False)
    _exit_if_behind(exit_code, rows)


def _exit_if_behind(exit_code: bool, rows: list[Any]) -> None:
    if exit_code and any(r.behind for r in rows):
        from click.exceptions import Exit

        raise Exit(1)
