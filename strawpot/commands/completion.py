"""`strawpot completion bash|zsh|fish`: the shell completion script (click's own machinery)."""

from __future__ import annotations

import rich_click as click

SECTION = "other"


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def command(shell: str) -> None:
    """Print the completion script for SHELL: it completes commands and options, package kinds, the project's
    installed roles after --role, and its run ids (attach, cancel, resume, agents, sessions show).

    bash: `eval "$(strawpot completion bash)"` in ~/.bashrc; zsh: the same with zsh in ~/.zshrc;
    fish: `strawpot completion fish > ~/.config/fish/completions/strawpot.fish`.
    """
    from click.shell_completion import get_completion_class

    from strawpot.cli_group import cli

    completion = get_completion_class(shell)
    assert completion is not None  # click ships all three
    click.echo(completion(cli, {}, "strawpot", "_STRAWPOT_COMPLETE").source())
