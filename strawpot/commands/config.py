"""`strawpot config [show|set]`: every effective setting and where it came from; change one in the right file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rich_click as click

from strawpot.commands._options import global_option, json_option, project_option, registry_option

SECTION = "packages"


def _show_options(func: Any) -> Any:
    func = json_option(func)
    func = registry_option(func)
    func = project_option(func)
    return click.option("--origin", "with_origin", is_flag=True,
                        help="Say where each value came from (file:line, variable, flag).")(func)


@click.group(invoke_without_command=True)
@_show_options
@click.pass_context
def command(ctx: click.Context, with_origin: bool, project: Path | None, registry: str | None, as_json: bool) -> None:
    """Show the effective settings with their origins (`show`, the default), or change one (`set`).

    Layers, lowest first: built-in defaults < global config.toml ($STRAWPOT_CONFIG_DIR or the platform's
    config folder) < the project's strawpot.toml < STRAWPOT_* environment variables < command-line flags.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(show, with_origin=with_origin, project=project, registry=registry, as_json=as_json)


@command.command()
@_show_options
def show(with_origin: bool, project: Path | None, registry: str | None, as_json: bool) -> None:
    """Print every setting's effective value (and, with --origin, where it came from)."""
    from strawpot.commands._read_only import config_show

    config_show(with_origin, project, registry, as_json)


@command.command("set")
@click.argument("key")
@click.argument("value")
@global_option
@project_option
def set_(key: str, value: str, is_global: bool, project: Path | None) -> None:
    """Set KEY to VALUE in strawpot.toml, or with --global in the global config; comments and order are kept.

    KEY is a dotted name from `strawpot config show` (e.g. policy.max_depth), an agent param
    (agents.NAME.PARAM) or, with --global only, an environment value (agents|skills|integrations.NAME.env.VAR).
    """
    from strawpot import config_files
    from strawpot.model.config_edit import set_value
    from strawpot.model.errors import UsageError

    if is_global:
        path = config_files.config_path()
    else:
        path = config_files.Project.at(project).manifest_path
        if not path.exists():
            raise UsageError(f"no strawpot.toml in {path.parent}", hint="use --global, or run this in a project")
    set_value(path, key, value, is_global=is_global)
    from strawpot.console import err_console

    err_console.print(f"set {key} in {path}", markup=False, highlight=False)
