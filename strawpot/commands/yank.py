"""`strawpot yank KIND SLUG VERSION`: hide a version from new resolutions (locks still install it)."""

from __future__ import annotations

import rich_click as click

from strawpot.commands._complete import complete_kind
from strawpot.commands._options import json_option, registry_option

SECTION = "publishing"


@click.command()
@click.argument("kind", shell_complete=complete_kind)
@click.argument("slug")
@click.argument("version")
@click.option("--undo", is_flag=True, help="Restore a yanked version.")
@registry_option
@json_option
def command(kind: str, slug: str, version: str, undo: bool, registry: str | None, as_json: bool) -> None:
    """Yank VERSION of a package: fresh locks avoid it; existing locks still install it."""
    from strawpot.commands._options import print_json
    from strawpot.console import out_console
    from strawpot.model.registry_answer import from_registry
    from strawpot.publishing.account import yank
    from strawpot.publishing.auth import registry_for, require_token

    chosen = registry_for(registry)
    url = chosen.url
    require_token(chosen)
    result = from_registry(yank(chosen, kind, slug, version, yanked=not undo))
    if as_json:
        print_json({"registry": url, "result": result})
        return
    verb = "restored" if undo else "yanked"
    out_console.print(f"{verb} {result['kind']} {result['slug']} {result['version']} on {url}", markup=False)
