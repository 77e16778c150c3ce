"""The registry as the pages see it: every package (re-read after a change or a few seconds) and who uses whom."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from registry_server.packages import CountedReads
from registry_server.state import Registry
from registry_server.storage.base import PackageRecord, VersionRecord
from strawpot.model.dependencies import read_edges
from strawpot.model.kinds import Kind

MAX_LISTED = 100_000  # the same bound the search API reads with
LISTING_TTL = 5.0  # seconds a listing is reused; only its download counts can be older than that


@dataclass(frozen=True)
class Edge:
    """A dependency of a version as written: the target package and the specifier ('' for any)."""

    kind: Kind
    slug: str
    spec: str


def edges(kind: Kind, record: VersionRecord) -> list[Edge]:
    """The dependencies of a `kind` version as `strawpot.model.dependencies` reads them (entries that do not
    parse are left off, as the solver leaves the version), and a role's default agent, in order."""
    found = [Edge(e.kind, e.name, "" if e.spec == "*" else e.spec)
             for e in read_edges(kind, record.dependencies).edges]
    if record.default_agent:
        found.append(Edge(Kind.AGENT, record.default_agent, ""))
    return found


class Catalogue:
    """Package listing and reverse dependencies, rebuilt when `Registry.generation` moves."""

    def __init__(self, reg: Registry, *, ttl: float = LISTING_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.reg, self.ttl, self.clock = reg, ttl, clock
        self._listing: tuple[int, float, tuple[PackageRecord, ...]] | None = None
        self._used_by: tuple[int, dict[tuple[Kind, str], list[PackageRecord]]] | None = None
        self._lock = threading.Lock()

    def packages(self) -> tuple[PackageRecord, ...]:
        """Every package, most recently updated first (blocking on a miss)."""
        generation, now = self.reg.generation, self.clock()
        cached = self._listing
        if cached is not None and cached[0] == generation and now - cached[1] < self.ttl:
            return cached[2]
        records = tuple(CountedReads(self.reg).list_packages(None, "updated", MAX_LISTED))
        self._listing = (generation, now, records)
        return records

    def used_by(self, kind: Kind, slug: str) -> list[PackageRecord]:
        """The packages whose latest version depends on (kind, slug), by slug."""
        generation = self.reg.generation
        cached = self._used_by
        if cached is None or cached[0] != generation:
            with self._lock:
                cached = self._used_by
                if cached is None or cached[0] != generation:
                    cached = (generation, self._build_used_by())
                    self._used_by = cached
        return cached[1].get((kind, slug), [])

    def _build_used_by(self) -> dict[tuple[Kind, str], list[PackageRecord]]:
        index: dict[tuple[Kind, str], list[PackageRecord]] = {}
        for pkg in sorted(self.packages(), key=lambda p: (p.slug, p.kind.value)):
            entry = self.reg.versions.load(pkg.kind, pkg.slug)
            if entry is None or entry.latest is None:
                continue
            for edge in {(e.kind, e.slug) for e in edges(pkg.kind, entry.latest)}:
                index.setdefault(edge, []).append(pkg)
        return index
