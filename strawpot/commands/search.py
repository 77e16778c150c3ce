"""`strawpot search QUERY`: find packages on the registry."""

from __future__ import annotations

from typing import Any

import rich_click as click

from strawpot.commands._options import json_option, registry_option

SECTION = "packages"
LISTED = 200  # packages of each kind compared with a query that found nothing (the registry's largest page)


@click.command()
@click.argument("query")
@click.option("--kind", default="all", help="Only this kind (skill, role, agent, memory, integration).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 200), help="At most this many results.")
@registry_option
@json_option
def command(query: str, kind: str, limit: int, registry: str | None, as_json: bool) -> None:
    """Search the registry for packages matching QUERY.

    When nothing matches, names up to three packages whose slug is near QUERY (did you mean …?), read from the
    registry's package lists; `--json` carries them as `suggestions`.
    """
    from strawpot.commands._read_only import parse_kind
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
        near = [] if results else _near_slugs(client, query, kind_value)
    if as_json:
        from strawpot.commands._options import print_json

        print_json({"command": "search", "registry": url, "query": query, "results": results,
                    "suggestions": [{"kind": k, "slug": slug} for k, slug in near]})
        return
    from strawpot.console import err_console, out_console

    if not results:
        from strawpot.model.display import terminal_safe

        named = [f"{k} {terminal_safe(slug)}" for k, slug in near]
        also = f"; did you mean {', '.join(named[:-1])} or {named[-1]}?" if len(named) > 1 else (
            f"; did you mean {named[0]}?" if named else "")
        err_console.print(f"No packages match {query!r} on {url}{also}", markup=False, soft_wrap=True)
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


def _near_slugs(client: Any, query: str, kind_value: str) -> list[tuple[str, str]]:
    """(kind, slug) of the packages whose slug is near `query`, nearest first: the registry's lists of each kind
    asked for (the most downloaded first, as many as one page holds), since its search found nothing."""
    from hub_client import NotFound, ProtocolError, ServerError
    from resolver.requirement import SLUG_MAX_LENGTH, SLUG_PATTERN
    from strawpot.model.kinds import Kind
    from strawpot.model.suggest import nearest

    found: list[tuple[str, str]] = []
    for kind in [k.value for k in Kind] if kind_value == "all" else [kind_value]:
        try:
            listed = client.list_packages(kind, limit=LISTED, sort="downloads")
        except (NotFound, ServerError, ProtocolError):  # a registry without this kind's list suggests nothing
            continue
        items = listed.get("items") if isinstance(listed, dict) else None
        slugs = [item.get("slug") for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        found += [(kind, slug) for slug in slugs[:LISTED]  # only slugs: no escapes, and short enough to compare
                  if isinstance(slug, str) and len(slug) <= SLUG_MAX_LENGTH and SLUG_PATTERN.fullmatch(slug)]
    names = nearest(query.strip().lower(), {slug for _, slug in found})
    return [(kind, slug) for name in names for kind, slug in found if slug == name]
