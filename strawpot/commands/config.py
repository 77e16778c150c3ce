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
    """Show the registry URL (and where it came from), cache dir, global root and config file."""
    import os

    from strawpot import settings
    from strawpot.model.manifest import Manifest

    the_project = settings.Project.at(project, is_global=is_global)
    manifest_url = Manifest.load(the_project.manifest_path).registry_url
    config_url = settings.load_config().get("registry", {}).get("url")
    if registry:
        origin = "--registry"
    elif os.environ.get("STRAWPOT_REGISTRY_URL"):
        origin = "STRAWPOT_REGISTRY_URL"
    elif manifest_url:
        origin = f"[registry].url in {the_project.manifest_path}"
    elif config_url:
        origin = f"[registry].url in {settings.config_path()}"
    else:
        origin = "default"
    url = settings.registry_url(registry, manifest_url)
    values = {
        "registry_url": url,
        "registry_url_from": origin,
        "token": "set" if settings.registry_token(url) else "not set",
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
