"""Where a lock's packages come from, compared with the lock before it: the registry moves a new lock makes."""

from __future__ import annotations

from collections import Counter

from strawpot.install.local import is_path_source
from strawpot.model.ids import package_id
from strawpot.model.lockfile import Lockfile
from strawpot.model.plural import count
from strawpot.registry_choice import same_registry
from valueclass import Record


class SourceMove(Record):
    """`packages` packages the previous lock had from the registry `were` now come from the registry `now`."""

    packages: int
    were: str
    now: str

    def line(self) -> str:
        verb, past = ("comes", "was") if self.packages == 1 else ("come", "were")
        return f"lock: {count(self.packages, 'package')} now {verb} from {self.now} ({past} {self.were})"

    def as_dict(self) -> dict[str, object]:
        return {"packages": self.packages, "from": self.were, "to": self.now}


def source_moves(previous: Lockfile | None, lock: Lockfile) -> list[SourceMove]:
    """The packages in both locks whose registry changed, counted by (old registry, new registry)."""
    if previous is None:
        return []
    before = {package_id(p.kind, p.name): p.source for p in previous.packages if not is_path_source(p)}
    moved: Counter[tuple[str, str]] = Counter()
    for pkg in lock.packages:
        were = before.get(package_id(pkg.kind, pkg.name))
        if were is not None and not is_path_source(pkg) and not same_registry(were, pkg.source):
            moved[(were, pkg.source)] += 1
    return [SourceMove(n, were, now) for (were, now), n in sorted(moved.items())]


def locked_elsewhere(previous: Lockfile | None, pid: str, registry: str) -> str | None:
    """The registry the previous lock has `pid` from, when that is not `registry`; else None."""
    if previous is None:
        return None
    for pkg in previous.packages:
        if package_id(pkg.kind, pkg.name) == pid and not is_path_source(pkg) and not same_registry(pkg.source, registry):
            return pkg.source
    return None
