"""`strawpot why KIND SLUG`: the chains of dependencies from strawpot.toml to a locked package."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_kind
from strawpot.commands._options import project_options

SECTION = "packages"


@click.command()
@click.argument("kind", shell_complete=complete_kind)
@click.argument("slug")
@project_options
def command(kind: str, slug: str, is_global: bool, project: Path | None, as_json: bool) -> None:
    """Show every path from a requirement in strawpot.toml to the package KIND SLUG (a step a role's `*` makes
    is marked (via *))."""
    from strawpot.commands._read_only import why

    why(kind, slug, is_global, project, as_json)
