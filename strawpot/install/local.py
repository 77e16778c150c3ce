"""Path sources in resolution: packages read from folders of this project (`{ path = ... }` requirements and the
members of its workspace) answer the solver themselves and are locked with the hash of every file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from resolver import InvalidVersion, ResolverError, Version
from resolver.provider import Candidate, Dependency, Unavailable
from strawpot.model.errors import UsageError
from strawpot.model.ids import package_id
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedDependency, LockedFile, LockedPackage, LockedTool
from strawpot.model.path_source import PATH_PREFIX, normal_path
from valueclass import Record

if TYPE_CHECKING:
    from strawpot.install.provider import HubProvider
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.manifest import Manifest
    from strawpot.model.package import Package

UNVERSIONED = "0.0.0"
"""The version a path package without `metadata.version` is locked at."""


class LocalPackage(Record):
    source: str
    """`path+<folder relative to the project>`, as the lock records it."""
    package: Package

    @property
    def version(self) -> str:
        return self.package.version or UNVERSIONED


def local_packages(project_dir: Path, manifest: Manifest) -> dict[str, LocalPackage]:
    """Package id -> path package: every workspace member (a dependency on a member resolves to it), then
    every `{ path = ... }` requirement (which wins)."""
    found: dict[str, LocalPackage] = {}
    if "workspace" in manifest.doc:
        from strawpot.model.workspace import load_workspace

        for member in load_workspace(project_dir).members:
            found[package_id(member.kind, member.slug)] = LocalPackage(PATH_PREFIX + member.rel, member.package)
    for entry in manifest.entries():
        if entry.path is None:
            continue  # a registry package: the folder readers below are imported only for a path source
        from strawpot.model.package import PackageInvalid
        from strawpot.model.package_folder import load_package
        from strawpot.publishing.prepare import invalid_package

        folder = project_dir / entry.path
        try:
            package = load_package(folder, entry.kind)
        except PackageInvalid as exc:
            raise invalid_package(exc, folder) from None
        if package.name != entry.name:
            raise UsageError(f"{manifest.path}: {entry.kind.plural}.{entry.name}: the package at {entry.path} is "
                             f"named {package.name!r}", hint=f"name the requirement {package.name!r}, or fix the path")
        found[package_id(entry.kind, entry.name)] = LocalPackage(PATH_PREFIX + normal_path(entry.path), package)
    return found


class LocalProvider:
    """The solver's provider: path packages answered from disk (one version each), the rest by the registry."""

    def __init__(self, hub: HubProvider, local: Mapping[str, LocalPackage]) -> None:
        self.hub = hub
        self.local = dict(local)

    def prefetch(self, packages: Iterable[str]) -> None:
        self.hub.prefetch([pid for pid in packages if pid not in self.local])

    def versions(self, package: str) -> Sequence[Candidate] | Unavailable:
        local = self.local.get(package)
        if local is None:
            return self.hub.versions(package)
        try:
            return [Candidate(Version.parse(local.version))]
        except InvalidVersion as exc:
            return Unavailable(f"{local.source}: {exc}")

    def dependencies(self, package: str, version: Version) -> Mapping[str, Dependency] | Unavailable:
        local = self.local.get(package)
        if local is None:
            return self.hub.dependencies(package, version)
        deps: dict[str, Dependency] = {}
        for dep in local.package.dependencies:
            pid = package_id(dep.kind, dep.name)
            try:
                deps[pid] = Dependency.parse(pid, dep.spec)
            except ResolverError as exc:
                return Unavailable(f"{local.source} has an invalid dependency: {exc}")
        agent = self._default_agent(package, local)
        if agent is not None:
            deps.setdefault(agent, Dependency.parse(agent, "*"))
        self.hub.edges[(package, str(version))] = {pid: dep.text for pid, dep in deps.items()}
        return deps

    def _default_agent(self, package: str, local: LocalPackage) -> str | None:
        from hub_client import PackageVersions

        if local.package.kind is not Kind.ROLE:
            return None
        agent = self.hub.role_agents.get(local.package.name) or local.package.default_agent
        if not agent:
            return None
        pid = package_id(Kind.AGENT, agent)
        if pid in self.local:
            return pid
        found = self.hub.metadata(pid)
        return pid if isinstance(found, PackageVersions) and found.versions else None

    def registry_roots(self, roots: Mapping[str, Dependency]) -> list[str]:
        """What the registry must be asked about: the roots and path packages' dependencies that are not local."""
        wanted = [pid for pid in roots if pid not in self.local]
        for local in self.local.values():
            wanted += [p for d in local.package.dependencies if (p := package_id(d.kind, d.name)) not in self.local]
        return list(dict.fromkeys(wanted))


def locked_local(pid: str, local: LocalPackage, edges: Mapping[str, str]) -> LockedPackage:
    """The lock's record of a path package: its source, every file's hash, its edges."""
    from strawpot.model.ids import split_id

    package = local.package
    files = tuple(
        LockedFile(path, _sha256(data), len(data), path in package.executables)
        for path, data in sorted(package.files.items())
    )
    kind, name = split_id(pid)
    return LockedPackage(
        kind=kind, name=name, version=local.version, source=local.source, archive_sha256=None, archive_size=None,
        files=files, dependencies=tuple(LockedDependency(*split_id(dep), spec) for dep, spec in sorted(edges.items())),
        tools=tuple(LockedTool(t.name, t.description[:500], dict(t.install)) for _, t in sorted(package.tools.items())),
        default_agent=package.default_agent,
    )


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def is_path_source(pkg: LockedPackage) -> bool:
    return pkg.source.startswith(PATH_PREFIX)


def read_path_source(project_dir: Path, pkg: LockedPackage) -> dict[str, tuple[bytes, bool]]:
    """A locked path package's files, read from its folder now (the caller checks them against the lock)."""
    from strawpot.model.package_folder import collect_files

    rel = pkg.source.removeprefix(PATH_PREFIX)
    folder = project_dir / rel
    if not folder.is_dir():
        raise UsageError(
            f"{pkg.kind.value} {pkg.name}: its path source {rel} (from strawpot.lock) is missing: {folder.resolve()} "
            "does not exist",
            hint="check out the folder there (paths are relative to the project), or lock without it",
        )
    files, executables, issues = collect_files(folder)
    if issues:
        raise UsageError(f"{folder}: " + "; ".join(str(i) for i in issues))
    return {path: (data, path in executables) for path, data in files.items()}


def changed_path_sources(project_dir: Path, lock: Lockfile) -> list[str]:
    """`kind name (folder)` of each locked path source whose files are not the locked ones now."""
    changed = []
    for pkg in lock.packages:
        if not is_path_source(pkg):
            continue
        try:
            files = read_path_source(project_dir, pkg)
        except UsageError:
            files = {}
        locked = {f.path: (f.sha256, f.executable) for f in pkg.files}
        if {path: (_sha256(data), ex) for path, (data, ex) in files.items()} != locked:
            changed.append(f"{pkg.kind.value} {pkg.name} ({pkg.source.removeprefix(PATH_PREFIX)})")
    return changed
