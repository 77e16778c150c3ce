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
    from strawpot.commands._read_only import tree

    tree(is_global, project, as_json)
