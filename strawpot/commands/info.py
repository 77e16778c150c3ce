"""`strawpot info KIND SLUG [--version V]`: a package's details and versions on the registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._complete import complete_kind
from strawpot.commands._options import json_option, registry_option

if TYPE_CHECKING:
    from pathlib import Path

    from hub_client import HubClient, PackageVersions
    from strawpot.model.kinds import Kind

SECTION = "packages"


@click.command()
@click.argument("kind", shell_complete=complete_kind)
@click.argument("slug")
@click.option("--version", "version", default=None, help="Show this version instead of the latest.")
@registry_option
@json_option
def command(kind: str, slug: str, version: str | None, registry: str | None, as_json: bool) -> None:
    """Show a package's summary, dependencies, files and published versions."""
    from strawpot.commands._read_only import parse_kind
    from strawpot.hub import hub_errors, open_client
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project
    from strawpot.model.package import slug_error
    from strawpot.model.registry_answer import from_registry
    from strawpot.registry_choice import choose_registry

    the_kind = parse_kind(kind)
    if "@" in slug:  # `info skill alpha@1.0.0`, as install names a version
        slug, _, at = slug.partition("@")
        if version is not None and version != at:
            raise UsageError(f"two versions given: {slug}@{at} and --version {version}")
        version = at.lstrip("=").strip()
    if err := slug_error(slug):
        raise UsageError(err)
    here = Project.at(None)
    chosen = choose_registry(here, registry)
    url = chosen.url
    with open_client(chosen) as client:
        try:
            with hub_errors(url):
                detail = from_registry(client.detail(the_kind.value, slug, version))
                versions = client.package_versions(the_kind.value, slug)
                meta = _main_meta(client, the_kind, slug, detail)
        except UsageError:
            from strawpot.hub import refuse_non_registry
            from strawpot.install.provider import HubProvider

            refuse_non_registry(client)
            from strawpot.model.ids import package_id

            close = HubProvider(client).suggest(package_id(the_kind, slug))
            raise UsageError(
                f"{the_kind.value} {slug}{f' {version}' if version else ''} was not found on {url}",
                hint=f"did you mean {the_kind.value} {close}?" if close else "try `strawpot search`",
            ) from None
    from strawpot.model.package import install_commands

    scripts = install_commands(meta)
    declared = meta.get("metadata", {}).get("strawpot", {}) if isinstance(meta.get("metadata"), dict) else {}
    extras: dict[str, dict[str, Any]] = {}
    for key in ("tools", "params", "env"):
        table = declared.get(key) if isinstance(declared, dict) else None
        if isinstance(table, dict) and table:
            extras[key] = table
    rows = [{"version": v.version, "yanked": v.yanked, "size": v.size} for v in reversed(versions.versions)]
    if as_json:
        from strawpot.commands._options import print_json
        from strawpot.model.install_command import remote_note

        print_json({"command": "info", "registry": url, "detail": detail, "versions": rows, "install": scripts,
                    "install_note": remote_note(scripts), **extras})
        return
    _render(the_kind.value, detail, rows)
    from strawpot.console import out_console

    for key, table in extras.items():  # what the package needs: tools on PATH, params it takes, env it reads
        out_console.print(f"{key}: {', '.join(map(str, table))}", markup=False, highlight=False, soft_wrap=True)
    from strawpot.model.install_command import install_lines

    for line in install_lines(scripts):
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    note = _trust_note(here.dir, the_kind, slug, scripts, detail, versions)
    if note is not None:  # what changed since this machine trusted the package here (files as well as the command)
        out_console.print(note, markup=False, highlight=False, soft_wrap=True)


def _trust_note(project_dir: Path, kind: Kind, slug: str, scripts: dict[str, str], detail: dict[str, Any],
                versions: PackageVersions) -> str | None:
    """Whether the shown version's install script for this OS, with its files, is trusted in the project here."""
    from strawpot.install.trust import trust_note
    from strawpot.model.ids import package_id
    from strawpot.model.lockfile import LockedFile
    from strawpot.model.platform import current_os

    latest = detail.get("latest_version")
    version = latest.get("version") if isinstance(latest, dict) else None
    shown = next((v for v in versions.versions if v.version == version), None)
    command = scripts.get(current_os())
    if command is None or shown is None:
        return None
    files = [LockedFile(f.path, f.sha256, f.size, f.executable) for f in shown.files if f.sha256 is not None]
    if not files or len(files) != len(shown.files):  # a registry that gives no file hashes: nothing to compare
        return None
    return trust_note(project_dir, package_id(kind, slug), command, files)


def _main_meta(client: HubClient, kind: Kind, slug: str, detail: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter of the shown version's main file ({} if it cannot be read)."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter

    latest = detail.get("latest_version")
    version = latest.get("version") if isinstance(latest, dict) else None
    if not isinstance(version, str):
        return {}
    data = client.fetch_file(kind.value, slug, kind.main_file, version)
    try:
        meta, _body = split_frontmatter(data.decode("utf-8"))
    except (UnicodeDecodeError, FrontmatterError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _render(kind: str, detail: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    from strawpot.console import out_console

    raw_latest = detail.get("latest_version")
    latest: dict[str, Any] = raw_latest if isinstance(raw_latest, dict) else {}
    yanked = " (yanked)" if latest.get("yanked") else ""
    out_console.print(f"{kind} {detail.get('slug')} {latest.get('version', '')}{yanked}", markup=False, style="bold")
    if detail.get("summary"):
        out_console.print(str(detail["summary"]), markup=False)
    owner = detail.get("owner")
    if isinstance(owner, dict) and owner.get("handle"):
        out_console.print(f"owner: {owner['handle']}", markup=False)
    deps = latest.get("dependencies") or detail.get("dependencies") or {}
    if isinstance(deps, dict):
        for group, entries in deps.items():
            if entries:
                out_console.print(f"{group}: {', '.join(map(str, entries))}", markup=False)
    files = latest.get("files") or []
    if isinstance(files, list) and files:
        out_console.print("files: " + ", ".join(str(f.get("path")) for f in files if isinstance(f, dict)), markup=False)
    shown = ", ".join(f"{r['version']}{' (yanked)' if r['yanked'] else ''}" for r in rows[:20])
    out_console.print(f"versions: {shown}" + (" …" if len(rows) > 20 else ""), markup=False)
