"""`strawpot workspace list`: the packages of the workspace this folder is in."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._options import json_option, project_option

if TYPE_CHECKING:
    from strawpot.model.workspace import Workspace

SECTION = "publishing"


@click.group()
def command() -> None:
    """A repository of many packages, declared by `[workspace] members = ["skills/*", "roles/*"]` in its root
    strawpot.toml; commands run anywhere inside it find that root."""


@command.command("list")
@project_option
@json_option
def list_members(project: Path | None, as_json: bool) -> None:
    """Print every member: kind, slug, version, folder and the members it depends on."""
    from strawpot.commands._options import print_json
    from strawpot.console import out_console
    from strawpot.model.layout import Project
    from strawpot.model.workspace import load_workspace

    workspace = load_workspace(Project.at(project).dir)
    rows = member_rows(workspace)
    if as_json:
        print_json({"root": str(workspace.root), "members": rows})
        return
    width = max((len(f"{r['kind']} {r['slug']}") for r in rows), default=0)
    path_width = max((len(r["path"]) for r in rows), default=0)
    for r in rows:
        local = ", ".join(r["local_dependencies"]) or "-"
        name = f"{r['kind']} {r['slug']}".ljust(width)
        out_console.print(f"{name}  {r['version'] or '(no version)':<10}  {r['path']:<{path_width}}  needs: {local}",
                          markup=False, highlight=False)


def member_rows(workspace: Workspace) -> list[dict[str, Any]]:
    """One JSON-ready row per member, in folder order."""
    return [
        {
            "kind": m.kind.value,
            "slug": m.slug,
            "version": m.package.version,
            "path": m.rel,
            "local_dependencies": [f"{d.kind.value}:{d.slug}" for d in workspace.local_dependencies(m)],
        }
        for m in workspace.members
    ]
