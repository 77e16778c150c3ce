"""`strawpot search QUERY`: find packages on the registry."""

from __future__ import annotations

from typing import Any

import rich_click as click

from strawpot.commands._options import json_option, registry_option

SECTION = "packages"


@click.command()
@click.argument("query")
@click.option("--kind", default="all", help="Only this kind (skill, role, agent, memory, integration).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 200), help="At most this many results.")
@registry_option
@json_option
def command(query: str, kind: str, limit: int, registry: str | None, as_json: bool) -> None:
    """Search the registry for packages matching QUERY."""
    from strawpot.commands._install_output import parse_kind
    from strawpot.hub import hub_errors, open_client
    from strawpot.model.layout import Project
    from strawpot.model.registry_answer import from_registry
    from strawpot.registry_choice import choose_registry

    if not query.strip():
        from strawpot.model.errors import UsageError

        raise UsageError("QUERY is empty", hint="search for a word, e.g. `strawpot search review`; "
                                                "`strawpot list --remote` lists every package")
    kind_value = "all" if kind == "all" else parse_kind(kind).value
    chosen = choose_registry(Project.at(None), registry)
    url = chosen.url
    with hub_errors(url), open_client(chosen) as client:
        found = client.search(query, kind_value, limit=limit)
        results = from_registry(found.get("results", [])) if isinstance(found, dict) else None
        if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
            from strawpot.model.errors import StrawpotError

            raise StrawpotError(f"registry {url}: unexpected search answer (\"results\" is not a list of packages)")
        _add_versions(client, results)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "search", "registry": url, "query": query, "results": results})
        return
    from strawpot.console import err_console, out_console

    if not results:
        err_console.print(f"No packages match {query!r} on {url}", markup=False)
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("kind", "slug", "version", "summary"):
        table.add_column(column)
    from strawpot.model.display import terminal_safe

    for item in results:
        table.add_row(*(terminal_safe(str(value)) for value in (item.get("kind", ""), item.get("slug", ""),
                                                               item.get("version") or "-", item.get("summary") or "")))
    out_console.print(table)


def _add_versions(client: Any, results: list[dict[str, Any]]) -> None:
    """Each result's newest version that is neither yanked nor a pre-release (`version`, None if it has none)."""
    from hub_client import PackageVersions
    from resolver import ResolverError, Version

    keys = [(str(r.get("kind")), str(r.get("slug"))) for r in results]
    found = client.package_versions_many(keys) if keys else {}
    for result, key in zip(results, keys, strict=True):
        answer = found.get(key)
        newest: Version | None = None
        if isinstance(answer, PackageVersions):
            for entry in answer.versions:
                try:
                    version = Version.parse(entry.version)
                except ResolverError:
                    continue
                if not entry.yanked and not version.is_prerelease and (newest is None or version > newest):
                    newest = version
        result["version"] = str(newest) if newest else None
