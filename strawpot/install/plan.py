"""Plan: what must change for the installed tree to equal a lock (a fast, stat-based comparison)."""

from __future__ import annotations

from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage, Lockfile
from strawpot.model.path_source import PATH_PREFIX
from valueclass import Record


class Change(Record):
    """One package that is installed, upgraded, downgraded, repaired or removed."""

    kind: Kind
    name: str
    version: str | None  # None: removed
    previous: str | None  # None: not installed before

    def as_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind.value, "name": self.name, "version": self.version, "previous": self.previous}


class Plan(Record):
    install: tuple[LockedPackage, ...]
    remove: tuple[tuple[Kind, str], ...]
    changes: tuple[Change, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not self.install and not self.remove


def make_plan(
    tree: InstalledTree, lock: Lockfile, *, previous: Lockfile | None = None, remove_extras: bool = False
) -> Plan:
    """Packages to (re)install because their `.version` or file sizes differ from the lock, and packages
    to remove: every one the lock does not hold with `remove_extras`, else only those `previous` held."""
    install: list[LockedPackage] = []
    changes: list[Change] = []
    present = installed_kinds(tree)
    for pkg in lock.packages:
        if pkg.kind not in present:  # no folder of its kind (a first install): nothing of it to read
            install.append(pkg)
            changes.append(Change(pkg.kind, pkg.name, pkg.version, None))
        # a path source's new content may keep every size: compare its bytes (a registry version never changes)
        elif tree.verify_package(pkg, deep=pkg.source.startswith(PATH_PREFIX)):
            install.append(pkg)
            changes.append(Change(pkg.kind, pkg.name, pkg.version, tree.installed_version(pkg.kind, pkg.name)))
    locked = {pkg.key for pkg in lock.packages}
    if remove_extras:
        candidates = [(p.kind, p.name) for p in tree.packages()]
    else:
        candidates = [p.key for p in previous.packages] if previous else []
    remove = []
    for kind, name in candidates:
        if (kind, name) not in locked and tree.package_dir(kind, name).is_dir():
            remove.append((kind, name))
            changes.append(Change(kind, name, None, tree.installed_version(kind, name)))
    return Plan(tuple(install), tuple(remove), tuple(changes), len(lock.packages) - len(install))


def installed_kinds(tree: InstalledTree) -> frozenset[Kind]:
    """The kinds with a folder in the tree: a package of any other kind is not installed (one stat a kind, where
    asking each package is a failed open of its `.version`)."""
    return frozenset(kind for kind in Kind if (tree.root / kind.plural).is_dir())
