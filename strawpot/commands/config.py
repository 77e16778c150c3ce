"""`strawpot config`: the effective settings and where each comes from."""

from __future__ import annotations

from pathlib import Path

import rich_click as click

from strawpot.commands._options import global_option, json_option, project_option, registry_option

SECTION = "packages"


@click.command()
@global_option
@project_option
@registry_option
@json_option
def command(is_global: bool, project: Path | None, registry: str | None, as_json: bool) -> None:
    """Show the registry URL (and where it came from), token, time limits, cache dir, global root and config file."""
    from strawpot import settings
    from strawpot.model.manifest import Manifest

    the_project = settings.Project.at(project, is_global=is_global)
    manifest = Manifest.load(the_project.manifest_path)
    chosen = settings.choose_registry(registry, manifest.registry_url)
    origin = {
        "flag": "--registry",
        "env": "STRAWPOT_REGISTRY_URL",
        "project": f"[registry].url in {the_project.manifest_path}",
        "config": f"[registry].url in {settings.config_path()}",
    }.get(chosen.origin, chosen.origin)
    limits = settings.timeouts(manifest.table("registry"))
    values = {
        "registry_url": chosen.url,
        "registry_url_from": origin,
        "token": "set" if settings.registry_token(chosen) else "not set",
        "http_timeout": f"{limits.request:g} s",
        "registry_deadline": f"{limits.deadline:g} s",
        "project": str(the_project.dir),
        "manifest": str(the_project.manifest_path),
        "lock": str(the_project.lock_path),
        "tree": str(the_project.tree_root),
        "cache_dir": str(settings.cache_dir()),
        "global_root": str(settings.global_root()),
        "config_file": str(settings.config_path()),
    }
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "config", **values})
        return
    from strawpot.console import out_console

    width = max(map(len, values))
    for key, value in values.items():
        out_console.print(f"{key.ljust(width)}  {value}", markup=False, highlight=False)
