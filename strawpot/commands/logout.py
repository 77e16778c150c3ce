"""`strawpot logout`: forget the token stored for a registry."""

from __future__ import annotations

import rich_click as click

from strawpot.commands._options import registry_option
from strawpot.model import own_secrets

SECTION = "publishing"


@click.command()
@registry_option
def command(registry: str | None) -> None:
    """Remove the token `strawpot login` stored for the registry."""
    from strawpot.console import err_console, out_console
    from strawpot.publishing.auth import forget_token, registry_for

    chosen = registry_for(registry)
    url = chosen.url
    if forget_token(url):
        out_console.print(f"logged out of {url}", markup=False)
    else:
        out_console.print(f"no token was stored for {url}", markup=False)
    if own_secrets.environ().get("STRAWPOT_TOKEN"):
        err_console.print("note: STRAWPOT_TOKEN is set and is still used", markup=False)
