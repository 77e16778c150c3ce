"""Read-only questions about a lock: the dependency tree, why a package is there, what is outdated."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from strawpot.model.fs import read_regular_file
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
from strawpot.model.lockfile import LockedPackage, Lockfile, LockfileError
from strawpot.model.package_limits import MAX_FILE_SIZE
from strawpot.model.yaml_scan import may_spell
from valueclass import Record

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

Key = tuple[Kind, str]
MAX_PATHS = 50
VIA_WILDCARD = "via *"  # the spec of an edge a role's `*` makes (every installed skill or role)


class Root(Record):
    """A requirement a query starts from: one of strawpot.toml's, or a locked package nothing depends on."""

    kind: Kind
    name: str
    spec: str


def load_roots(manifest_path: Path) -> list[Root]:
    """The manifest's requirements as query roots (a malformed manifest is reported like anywhere else)."""
    from strawpot.model.manifest import Manifest

    return [Root(e.kind, e.name, e.spec) for e in Manifest.read(manifest_path, remember=True).entries()]


def roots_of(lock: Lockfile, manifest_roots: Iterable[Root] | None) -> list[Root]:
    """The manifest's requirements that the lock holds, plus any locked package nothing depends on."""
    roots = [r for r in (manifest_roots or []) if lock.get(r.kind, r.name) is not None]
    named = {(r.kind, r.name) for r in roots}
    needed = {(d.kind, d.name) for p in lock.packages for d in p.dependencies}
    roots += [Root(p.kind, p.name, "*") for p in lock.packages if p.key not in needed and p.key not in named]
    return roots


def wildcard_edges(lock: Lockfile, tree_root: Path) -> dict[Key, list[Key]]:
    """The packages each locked role's `*` brings in (every locked skill or role it does not name), read from
    the installed ROLE.md (the lock keeps edges to packages only). An unreadable role brings in nothing."""
    from strawpot.model.installed import InstalledTree

    installed = InstalledTree(tree_root)
    edges: dict[Key, list[Key]] = {}
    for role in (p for p in lock.packages if p.kind is Kind.ROLE):
        folder = installed.package_dir(Kind.ROLE, role.name)
        data, _, unreadable = read_regular_file(folder / Kind.ROLE.main_file, MAX_FILE_SIZE)
        if unreadable or not may_spell(data, b"*"):
            continue  # unreadable (load_package refuses it too), or naming its skills: no YAML to parse
        from strawpot.model.package import PackageInvalid
        from strawpot.model.package_folder import load_package

        try:
            package = load_package(folder, Kind.ROLE)
        except (OSError, PackageInvalid):
            continue
        named = {(d.kind, d.name) for d in role.dependencies} | {role.key}
        kinds = {Kind.SKILL} if package.skills_wildcard else set()
        kinds |= {Kind.ROLE} if package.roles_wildcard else set()
        if found := [p.key for p in lock.packages if p.kind in kinds and p.key not in named]:
            edges[role.key] = sorted(found, key=lambda k: (k[0].value, k[1]))
    return edges


def _edges(pkg: LockedPackage, wildcards: dict[Key, list[Key]]) -> list[tuple[Kind, str, str]]:
    """(kind, name, spec) of the packages `pkg` brings in: its locked edges, then what its `*` brings in."""
    named = [(d.kind, d.name, d.spec) for d in sorted(pkg.dependencies, key=lambda d: (d.kind.value, d.name))]
    return named + [(kind, name, VIA_WILDCARD) for kind, name in wildcards.get(pkg.key, [])]


def tree(lock: Lockfile, roots: list[Root], wildcards: dict[Key, list[Key]] | None = None) -> list[dict[str, Any]]:
    """Nested nodes `{kind, name, version, spec, dependencies}`; a subtree shown before is `deduplicated`;
    a package a role's `*` brings in has the spec `via *`."""
    seen: set[Key] = set()

    def node(kind: Kind, name: str, spec: str, path: tuple[Key, ...]) -> dict[str, Any]:
        pkg = lock.get(kind, name)
        out: dict[str, Any] = {"kind": kind.value, "name": name, "version": pkg.version if pkg else None, "spec": spec}
        key = (kind, name)
        if pkg is None:
            out["missing"] = True
            return out
        if key in seen or key in path:
            out["deduplicated"] = True
            return out
        seen.add(key)
        out["dependencies"] = [node(k, n, spec, (*path, key)) for k, n, spec in _edges(pkg, wildcards or {})]
        return out

    return [node(r.kind, r.name, r.spec, ()) for r in roots]


def render_tree(nodes: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []

    def walk(items: list[dict[str, Any]], prefix: str, top: bool) -> None:
        for i, item in enumerate(items):
            last = i == len(items) - 1
            branch = "" if top else ("└── " if last else "├── ")
            spec = "" if item["spec"] in ("*", "") or top else f" ({item['spec']})"
            mark = " (*)" if item.get("deduplicated") else (" (missing from the lock)" if item.get("missing") else "")
            lines.append(f"{prefix}{branch}{item['kind']} {item['name']} {item['version'] or ''}".rstrip() + spec + mark)
            child_prefix = prefix if top else prefix + ("    " if last else "│   ")
            walk(item.get("dependencies", []), child_prefix, False)

    walk(nodes, "", True)
    return lines


def why(lock: Lockfile, roots: list[Root], target: Key,
        wildcards: dict[Key, list[Key]] | None = None) -> list[list[tuple[LockedPackage, str]]]:
    """Every path (up to MAX_PATHS) from a root to `target`: [(package, specifier that led to it)]; a step a
    role's `*` made has the specifier `via *`."""
    paths: list[list[tuple[LockedPackage, str]]] = []

    def walk(kind: Kind, name: str, spec: str, path: list[tuple[LockedPackage, str]]) -> None:
        pkg = lock.get(kind, name)
        if pkg is None or len(paths) >= MAX_PATHS or any(p.key == pkg.key for p, _ in path):
            return
        path = [*path, (pkg, spec)]
        if pkg.key == target:
            paths.append(path)
            return
        for kind, name, spec in _edges(pkg, wildcards or {}):
            walk(kind, name, spec, path)

    for root in roots:
        walk(root.kind, root.name, root.spec, [])
    return paths


def incoming_specs(lock: Lockfile, roots: list[Root]) -> dict[Key, list[str]]:
    """Every specifier that constrains each locked package (the manifest's and its dependents')."""
    specs: dict[Key, list[str]] = {}
    for root in roots:
        specs.setdefault((root.kind, root.name), []).append(root.spec)
    for pkg in lock.packages:
        for dep in pkg.dependencies:
            specs.setdefault((dep.kind, dep.name), []).append(dep.spec)
    return specs


class Outdated(Record):
    """A locked package beside the newest version its specifiers allow and the newest published."""

    kind: Kind
    name: str
    locked: str
    allowed: str | None  # the newest version every specifier on it allows
    newest: str | None  # the newest version on the registry (not yanked, not a pre-release)
    locked_yanked: bool = False  # the locked version has been yanked since

    @property
    def behind(self) -> bool:
        return self.locked_yanked or (self.newest is not None and self.newest != self.locked)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "name": self.name, "locked": self.locked, "locked_yanked": self.locked_yanked,
                "allowed": self.allowed, "newest": self.newest}


def outdated(lock: Lockfile, roots: list[Root], available: dict[Key, list[tuple[str, bool]]]) -> list[Outdated]:
    """Locked vs newest allowed vs newest, from each package's (version, yanked) list on the registry."""
    from resolver import ResolverError, Version, VersionSet, parse_specifier

    specs = incoming_specs(lock, roots)
    rows = []
    for pkg in lock.packages:
        allowed_set = VersionSet.full()
        for spec in specs.get(pkg.key, []):
            try:
                allowed_set = allowed_set.intersection(parse_specifier(spec))
            except ResolverError:
                continue
        newest: Version | None = None
        allowed: Version | None = None
        for text, yanked in available.get(pkg.key, []):
            try:
                version = Version.parse(text)
            except ResolverError:
                continue
            if yanked or version.is_prerelease:
                continue
            newest = version if newest is None or version > newest else newest
            if allowed_set.contains(version) and (allowed is None or version > allowed):
                allowed = version
        yanked_now = any(y and text == pkg.version for text, y in available.get(pkg.key, []))
        rows.append(Outdated(pkg.kind, pkg.name, pkg.version, str(allowed) if allowed else None,
                             str(newest) if newest else None, yanked_now))
    return rows


def load_lock(project: Project, *, remember: bool = False) -> Lockfile:
    """The project's lock (`remember`: see `Lockfile.load`), or a usage error saying how to create it."""
    if not project.lock_path.exists():
        raise LockfileError(f"{project.lock_path}: no lockfile", hint="run `strawpot lock` or `strawpot install`")
    return Lockfile.load(project.lock_path, remember=remember)


def lock_is_behind(project: Project, lock: Lockfile) -> bool:
    """Whether strawpot.toml asks for something other than what strawpot.lock was written for (the manifest's parse
    kept in the cache folder serves: see `Manifest.read`)."""
    from strawpot.model.manifest import Manifest

    if not project.manifest_path.exists():
        return False
    return Manifest.read(project.manifest_path, remember=True).dependency_hash() != lock.manifest_hash


def locked_project(folder: Path | None, is_global: bool, *, remember: bool = False) -> tuple[Project, Lockfile]:
    """The project a command names (`--project`, `--global`, else here) and its lock (`remember`: see
    `Lockfile.load`)."""
    project = Project.at(folder, is_global=is_global)
    return project, load_lock(project, remember=remember)
