"""`strawpot config [show|set]`: every effective setting and where it came from; change one in the right file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._options import global_option, json_option, project_option, registry_option

if TYPE_CHECKING:
    from strawpot.model.settings import Settings, Value

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
    from strawpot import config_files
    from strawpot.model.folders import home_dir
    from strawpot.registry_choice import choose_registry

    the_project = config_files.Project.at(project)
    effective = config_files.load_settings(the_project, {"registry.url": ("--registry", registry)})
    url = effective.get("registry.url")
    paths = {
        "project": str(the_project.dir), "manifest": str(the_project.manifest_path),
        "lock": str(the_project.lock_path), "tree": str(the_project.tree_root),
        "cache_dir": str(config_files.cache_dir()), "global_root": str(home_dir()),
        "config_file": str(config_files.config_path()),
    }
    secret = choose_registry(the_project, settings=effective).token
    token = "set" if secret else "not set"
    token_from = ("" if not secret else "env STRAWPOT_TOKEN" if secret == effective.tokens.env
                  else f"global config {config_files.config_path()}")
    _warn(effective)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({
            "command": "config", "registry_url": url, "registry_url_from": str(effective.origin("registry.url")),
            "token": token, "settings": [_json(v) for v in _rows(effective)], "paths": paths,
        })
        return
    from strawpot.console import out_console

    rows = [(v.key, _text(v), str(v.origin)) for v in _rows(effective)]
    rows += [(f"paths.{k}", v, "") for k, v in paths.items()] + [("registry.token", f"({token})", token_from)]
    width = max(len(key) for key, _, _ in rows)
    for key, value, origin in rows:
        shown = f"{key.ljust(width)} = {value}"
        out_console.line(f"{shown}  ({origin})" if with_origin and origin else shown, highlight=False)  # a pipe: no rich


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


def _rows(effective: Settings) -> list[Value]:
    rows = sorted(effective.values.values(), key=lambda v: v.key)
    for agent in sorted(effective.agents):
        rows += [effective.agents[agent][k] for k in sorted(effective.agents[agent])]
    for key in sorted(effective.env_tables):
        rows += [effective.env_tables[key][k] for k in sorted(effective.env_tables[key])]
    return rows


def _text(value: Value) -> str:
    if ".env." in value.key:
        return "(set)"  # secrets are never printed
    raw = value.value
    if raw is None:
        return "(not set)"
    if isinstance(raw, tuple):
        return "[" + ", ".join(raw) + "]"
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return f"{raw:g}" if isinstance(raw, float) else str(raw)


def _json(value: Value) -> dict[str, Any]:
    raw: Any = "(set)" if ".env." in value.key else value.value
    return {"key": value.key, "value": list(raw) if isinstance(raw, tuple) else raw,
            "layer": value.origin.layer, "origin": str(value.origin)}


def _warn(effective: Settings) -> None:
    for warning in effective.warnings:
        click.echo(f"warning: {warning}", err=True)
