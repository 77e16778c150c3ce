"""`GET /skills|roles/{slug}/resolve`: the transitive dependencies chosen by our PubGrub solver."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.cache import VersionsCache
from registry_server.errors import ApiError
from registry_server.packages import package_versions, pick_version
from registry_server.state import path_kind, registry
from resolver import (
    Candidate,
    Dependency,
    NoSolution,
    Unavailable,
    Version,
    explain,
    solve,
)
from strawpot.model.dependencies import read_edges
from strawpot.model.ids import package_id, split_id
from strawpot.model.kinds import Kind


class StorageProvider:
    """The solver's `DependencyProvider` over the registry's own (cached) version lists."""

    def __init__(self, cache: VersionsCache) -> None:
        self.cache = cache

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        kind, slug = split_id(package)
        entry = self.cache.load(kind, slug)
        if entry is None:
            return Unavailable("it is not published in this registry")
        return [Candidate(Version.parse(r.version), r.yanked) for r in entry.records]

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        kind, slug = split_id(package)
        entry = self.cache.load(kind, slug)
        record = entry.by_version.get(str(version)) if entry else None
        if record is None:
            return Unavailable(f"version {version} is not published")
        return edges(kind, record.dependencies)

    def prefetch(self, packages: Iterable[str]) -> None:
        return None


def edges(kind: Kind, dependencies: Mapping[str, list[str]]) -> dict[str, Dependency] | Unavailable:
    """The v1 dependency lists of a `kind` version as solver edges (`strawpot.model.dependencies`)."""
    found = read_edges(kind, dependencies)
    if found.bad:
        return Unavailable(f"its dependencies are invalid: {found.bad[0].group}: {found.bad[0].message}")
    return {edge.id: Dependency.parse(edge.id, edge.spec) for edge in found.edges}


def leaves_first(chosen: Mapping[str, Version], provider: StorageProvider) -> list[str]:
    """Every chosen package, each after the packages it depends on (ties by id)."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(pid: str) -> None:
        if pid in seen:
            return
        seen.add(pid)
        deps = provider.dependencies(pid, chosen[pid])
        if not isinstance(deps, Unavailable):
            for dep in sorted(deps):
                if dep in chosen:
                    visit(dep)
        order.append(pid)

    for pid in sorted(chosen):
        visit(pid)
    return order


def resolve_package(cache: VersionsCache, kind: Kind, slug: str, version: str) -> list[dict[str, str]]:
    """The root version's own edges are the solver's root, so explanations start from "kind slug version"."""
    provider = StorageProvider(cache)
    root = package_id(kind, slug)
    root_edges = provider.dependencies(root, Version.parse(version))
    if isinstance(root_edges, Unavailable):
        raise ApiError(400, f"cannot resolve {kind.value} {slug} {version}: {root_edges.reason}")
    chosen = solve(
        provider, root_edges, root_name=f"{kind.value} {slug} {version}",
        display_name=lambda pid: pid.replace(":", " ", 1),
    )
    chosen.pop(root, None)
    result = []
    for pid in leaves_first(chosen, provider):
        dep_kind, dep_slug = split_id(pid)
        result.append({"kind": dep_kind.value, "slug": dep_slug, "version": str(chosen[pid])})
    return result


async def resolve(request: Request) -> JSONResponse:
    kind, slug = path_kind(request), request.path_params["slug"]
    if kind not in (Kind.SKILL, Kind.ROLE):
        raise ApiError(404, f"resolve is for skills and roles; a {kind.value} has no package dependencies")
    reg = registry(request)
    record = pick_version(await package_versions(reg, kind, slug), kind, slug, request.query_params.get("version"))
    try:
        deps = await run_in_threadpool(resolve_package, reg.versions, kind, slug, record.version)
    except NoSolution as exc:
        raise ApiError(400, f"cannot resolve the dependencies of {kind.value} {slug} {record.version}:\n{explain(exc)}") from None
    return JSONResponse({kind.value: slug, "version": record.version, "dependencies": deps})
