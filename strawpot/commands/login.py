"""`strawpot login`: check a registry token with `whoami` and keep it in the config file."""

from __future__ import annotations

import rich_click as click

from strawpot.commands._options import registry_option

SECTION = "publishing"


@click.command()
@registry_option
@click.option("--token-stdin", is_flag=True, help="Read the token from standard input (the default when it is not a terminal).")
def command(registry: str | None, token_stdin: bool) -> None:
    """Store a token for a registry (checked first), so publish, yank and whoami can use it.

    The token goes to the config file (`[tokens]`, keyed by registry URL, mode 0600).
    STRAWPOT_TOKEN, when set, is used instead of any stored token.
    """
    import sys

    from strawpot.config_files import config_path
    from strawpot.console import out_console
    from strawpot.model.errors import UsageError
    from strawpot.publishing.account import check_token
    from strawpot.publishing.auth import registry_for, store_token

    chosen = registry_for(registry)
    url = chosen.url
    if token_stdin or not sys.stdin.isatty():  # no terminal: read the token as piped, with no getpass warning
        token = sys.stdin.readline().strip()
    else:
        try:
            token = click.prompt(f"Token for {url}", hide_input=True, err=True).strip()
        except click.Abort:
            if sys.stdin.isatty():
                raise  # Ctrl-C at the prompt
            token = ""  # end of input with no terminal: nothing was given
    if not token:
        raise UsageError(
            "no token given",
            hint="paste the `sh_...` token the registry gave you, or pipe it: `... | strawpot login --token-stdin`",
        )
    user = check_token(chosen.with_token(token))
    store_token(url, token)
    out_console.print(f"logged in to {url} as {user.get('handle', '?')} (token stored in {config_path()})", markup=False)
