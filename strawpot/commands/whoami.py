"""`strawpot whoami`: who the registry thinks the current token belongs to."""

from __future__ import annotations

import rich_click as click

from strawpot.commands._options import json_option, registry_option

SECTION = "publishing"


@click.command()
@registry_option
@json_option
def command(registry: str | None, as_json: bool) -> None:
    """Show the user of the token for the registry (STRAWPOT_TOKEN or the stored one)."""
    from strawpot.commands._options import print_json
    from strawpot.console import out_console
    from strawpot.model.registry_answer import from_registry
    from strawpot.publishing.account import check_token
    from strawpot.publishing.auth import registry_for, require_token

    chosen = registry_for(registry)
    url = chosen.url
    require_token(chosen)
    user = from_registry(check_token(chosen))
    if as_json:
        print_json({"registry": url, "user": user})
        return
    name = user.get("display_name")
    extra = f" ({name})" if name and name != user.get("handle") else ""
    out_console.print(f"{user.get('handle', '?')}{extra}, {user.get('role', 'user')} on {url}", markup=False)
