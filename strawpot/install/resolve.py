"""Manifest requirements → the PubGrub solver → a Lockfile recording every file hash and dependency edge."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, NoReturn

from hub_client import NotFound, OfflineMiss, PackageVersions
from resolver import NoSolution, ResolverError, Version, solve
from resolver.provider import Dependency
from strawpot import __version__
from strawpot.install.local import LocalPackage, LocalProvider, locked_local
from strawpot.install.provider import HubProvider
from strawpot.model.errors import ConflictError, RegistryUnreachable, UsageError
from strawpot.model.ids import display, humanize, package_id, split_id
from strawpot.model.lockfile import LockedDependency, LockedFile, LockedPackage, LockedTool, Lockfile
from valueclass import State

if TYPE_CHECKING:
    from hub_client import HubClient, VersionInfo
    from strawpot.model.manifest import ManifestEntry


class Resolution(State):
    """A new lock, plus file contents already downloaded while locking (servers without archives)."""

    _fields = ("lock", "fetched", "skipped", "infos")

    def __init__(self, lock: Lockfile, *, skipped: dict[str, list[tuple[str, int]]] | None = None) -> None:
        self.lock = lock
        self.fetched: dict[tuple[str, str], dict[str, bytes]] = {}
        # versions `[install] min_release_age` kept out, by package id: (version, ms since the epoch published)
        self.skipped = {} if skipped is None else skipped
        self.infos: dict[tuple[str, str], VersionInfo] = {}  # (kind, name): the chosen version


def root_dependencies(entries: Iterable[ManifestEntry], *, where: str = "strawpot.toml") -> dict[str, Dependency]:
    roots: dict[str, Dependency] = {}
    for entry in entries:
        pid = package_id(entry.kind, entry.name)
        try:
            roots[pid] = Dependency.parse(pid, entry.spec)
        except ResolverError as exc:
            raise UsageError(f"{where}: {entry.kind.plural}.{entry.name}: {exc}") from None
    return roots


def locked_preferences(lock: Lockfile | None, unlock: Collection[str] = ()) -> dict[str, Version]:
    """The versions of `lock` to keep, except the package ids in `unlock`."""
    if lock is None:
        return {}
    prefs: dict[str, Version] = {}
    for pkg in lock.packages:
        pid = package_id(pkg.kind, pkg.name)
        if pid in unlock:
            continue
        try:
            prefs[pid] = Version.parse(pkg.version)
        except ResolverError:
            continue
    return prefs


def resolve(
    client: HubClient,
    entries: Iterable[ManifestEntry],
    *,
    source: str,
    manifest_hash: str,
    role_agents: Mapping[str, str] | None = None,
    preferences: Mapping[str, Version] | None = None,
    where: str = "strawpot.toml",
    speculate: Callable[[list[tuple[str, str, VersionInfo]]], None] | None = None,
    local: Mapping[str, LocalPackage] | None = None,
    previous: Lockfile | None = None,
    min_age: float = 0.0,
) -> Resolution:
    """Solve the requirements against the registry and build the lock (raises ConflictError, exit 3);
    `local` packages (path sources) answer from their folders and are never fetched; `previous` (the lock
    before) names the registry a package that is not found here came from; versions published less than `min_age`
    seconds ago are never chosen (`Resolution.skipped` names them)."""
    preferred = {pid: str(v) for pid, v in (preferences or {}).items()}
    provider = HubProvider(client, role_agents=role_agents, preferred=preferred, speculate=speculate,
                           min_age=min_age)
    both = LocalProvider(provider, local or {})
    roots = root_dependencies(entries, where=where)
    asked = both.registry_roots(roots)
    if asked:
        provider.prefetch(asked)
    _check_roots(provider, {pid: dep for pid, dep in roots.items() if pid not in both.local}, previous)
    try:
        versions = solve(
            both, roots, locked=dict(preferences or {}), root_name="your project", display_name=display
        )
    except NoSolution as exc:
        _raise_no_solution(provider, exc)
    resolution = Resolution(Lockfile((), manifest_hash), skipped=_skipped(provider))
    packages = [
        locked_local(pid, both.local[pid], _edges(both, pid, version)) if pid in both.local
        else _locked_package(client, provider, pid, str(version), source, resolution.fetched)
        for pid, version in versions.items()
    ]
    resolution.infos = {(p.kind.value, p.name): provider.info(package_id(p.kind, p.name), p.version)
                        for p in packages if package_id(p.kind, p.name) not in both.local}
    resolution.lock = Lockfile(tuple(packages), manifest_hash, generated_by=f"strawpot {__version__}")
    return resolution


def _skipped(provider: HubProvider) -> dict[str, list[tuple[str, int]]]:
    return {pid: [(v, info.created_at or 0) for v, info in found.items()] for pid, found in sorted(provider.skipped.items())}


def _edges(provider: LocalProvider, pid: str, version: Version) -> dict[str, str]:
    edges = provider.hub.edges.get((pid, str(version)))
    if edges is None:
        provider.dependencies(pid, version)
        edges = provider.hub.edges.get((pid, str(version)), {})
    return edges


def _check_roots(provider: HubProvider, roots: Mapping[str, Dependency], previous: Lockfile | None = None) -> None:
    """An unknown top-level package is a usage error naming it (with a close name, or the other registry the
    lock has it from), not a conflict."""
    url = provider.client.base_url
    for pid in roots:
        found = provider.metadata(pid)
        if isinstance(found, NotFound):
            from strawpot.hub import refuse_non_registry
            from strawpot.install.source_moves import locked_elsewhere

            refuse_non_registry(provider.client)
            if (other := locked_elsewhere(previous, pid, url)) is not None:
                raise UsageError(f"{display(pid)} is not on the registry {url}; strawpot.lock has it from another "
                                 f"registry, {other}",
                                 hint=f"install from the registry the lock names (--registry {other}, if it still "
                                      f"runs), or publish {display(pid)} to {url}")
            suggestion = provider.suggest(pid)
            raise UsageError(
                f"{display(pid)} was not found on the registry {url}",
                hint=f"did you mean {split_id(pid)[0].value} {suggestion}?" if suggestion
                else "check the name with `strawpot search`",
            )
        if isinstance(found, OfflineMiss):
            raise RegistryUnreachable(
                f"offline, and {display(pid)} is not in the cache", hint="run once without --offline"
            )
        if isinstance(found, PackageVersions) and not found.versions:
            raise UsageError(f"{display(pid)} has no published versions on {provider.client.base_url}")


def _raise_no_solution(provider: HubProvider, exc: NoSolution) -> NoReturn:
    from resolver import explain  # the report's module loads only when there is something to explain

    offline = [pid for pid, found in provider._known.items() if isinstance(found, OfflineMiss)]
    if offline:
        raise RegistryUnreachable(
            f"offline, and the metadata of {', '.join(map(display, offline))} is not in the cache",
            hint="run once without --offline",
        ) from None
    young = [f"{display(pid)} {version}" for pid, found in sorted(provider.skipped.items()) for version in found]
    raise ConflictError(
        "no set of versions satisfies the requirements:\n" + humanize(explain(exc)),
        hint=f"[install] min_release_age left out {', '.join(young)}, published too recently; wait, or lower the "
             "setting" if young else "relax a specifier in strawpot.toml, or see `strawpot why KIND SLUG`",
    ) from None


def _locked_package(
    client: HubClient,
    provider: HubProvider,
    pid: str,
    version: str,
    source: str,
    fetched: dict[tuple[str, str], dict[str, bytes]],
) -> LockedPackage:
    kind, name = split_id(pid)
    info = provider.info(pid, version)
    edges = provider.edges.get((pid, version))
    if edges is None:
        provider.dependencies(pid, Version.parse(version))
        edges = provider.edges.get((pid, version), {})
    if provider.has_archives(pid) and all(f.sha256 for f in info.files):
        files = tuple(LockedFile(f.path, f.sha256 or "", f.size, f.executable) for f in info.files)
    else:
        files = _hash_files_v1(client, pid, info.version, [f.path for f in info.files], fetched)
    tools = tuple(
        LockedTool(
            str(tool),
            str(spec.get("description", ""))[:500] if isinstance(spec, dict) else "",
            {str(k): str(v) for k, v in install.items()}
            if isinstance(spec, dict) and isinstance(install := spec.get("install"), dict) else {},
        )
        for tool, spec in sorted(info.tools.items())
    )
    return LockedPackage(
        kind=kind,
        name=name,
        version=info.version,
        source=source,
        archive_sha256=info.sha256 if provider.has_archives(pid) else None,
        archive_size=info.size if provider.has_archives(pid) else None,
        files=files,
        dependencies=tuple(
            LockedDependency(*split_id(dep), spec) for dep, spec in sorted(edges.items())
        ),
        tools=tools,
        default_agent=info.default_agent,
    )


def _hash_files_v1(
    client: HubClient, pid: str, version: str, paths: list[str], fetched: dict[tuple[str, str], dict[str, bytes]]
) -> tuple[LockedFile, ...]:
    """A server without archives lists no hashes: fetch the files once and lock what we received."""
    kind, name = split_id(pid)
    contents = client.fetch_files(kind.value, name, version, paths)
    fetched[(pid, version)] = contents
    return tuple(
        LockedFile(path, hashlib.sha256(data).hexdigest(), len(data), False) for path, data in sorted(contents.items())
    )
