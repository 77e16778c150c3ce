"""Commands that are another command under a second name, with their package argument required."""

from __future__ import annotations

import rich_click as click


def alias_with_packages(original: click.Command, name: str, target: str, summary: str) -> click.Command:
    """`original` as `name`, its KIND SLUG... argument required (`add` and `remove`, as uv users type them)."""
    params = []
    for param in original.params:
        if isinstance(param, click.Argument) and param.name == "packages":
            param = click.Argument(["packages"], nargs=-1, required=True, metavar="KIND SLUG[SPEC]...")
        params.append(param)
    return click.RichCommand(
        name=name, params=params, callback=original.callback,
        help=f"{summary}\n\nThe same options as `strawpot {target}` (see `strawpot {target} --help`).",
        short_help=summary,
    )
