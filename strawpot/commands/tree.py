"""`strawpot tree`: the locked dependency tree, from the requirements in strawpot.toml."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import project_options

SECTION = "packages"


@click.command()
@project_options
def command(is_global: bool, project: Path | None, as_json: bool) -> None:
    """Print the dependency tree recorded in strawpot.lock (a repeated subtree is marked (*); what a role's
    `skills: ["*"]` or `roles: ["*"]` brings in is marked (via *))."""
    from strawpot.install.queries import (
        load_roots,
        locked_project,
        render_tree,
        roots_of,
        tree,
        wildcard_edges,
    )

    the_project, lock = locked_project(project, is_global)
    from strawpot.commands._install_output import note_stale_lock

    note_stale_lock(the_project, lock)
    nodes = tree(lock, roots_of(lock, load_roots(the_project.manifest_path)), wildcard_edges(lock, the_project.tree_root))
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "tree", "lock": str(the_project.lock_path), "roots": nodes})
        return
    from strawpot.console import out_console

    for line in render_tree(nodes):
        out_console.line(line, highlight=False)  # to a pipe without rich
