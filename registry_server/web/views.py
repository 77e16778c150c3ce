"""What each page shows, gathered from the registry (blocking: run in a worker thread)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from registry_server.search import rank
from registry_server.state import Registry
from registry_server.storage.base import PackageRecord, VersionRecord
from registry_server.web.catalogue import Catalogue, Edge, edges
from registry_server.web.mainfile import MainFile, MainFiles
from strawpot.model.kinds import KIND_ORDER, Kind

PAGE_SIZE = 20
SHORT_LIST = 10


class NotFound(Exception):
    """What the visitor asked for is not there; the message says what."""


@dataclass(frozen=True)
class Listed:
    package: PackageRecord
    latest: str | None


@dataclass(frozen=True)
class Home:
    counts: list[tuple[Kind, int]]
    recent: list[Listed]
    popular: list[Listed]


@dataclass(frozen=True)
class Results:
    query: str
    kind: Kind | None
    page: int
    pages: int
    total: int
    items: list[Listed]


@dataclass(frozen=True)
class Dependency:
    edge: Edge
    exists: bool


@dataclass(frozen=True)
class PackagePage:
    package: PackageRecord
    record: VersionRecord
    latest: VersionRecord | None
    versions: list[VersionRecord]  # newest first
    main: MainFile
    dependencies: list[Dependency]
    used_by: list[Listed]
    strawpot_command: str
    strawhub_command: str
    signer: str | None = None  # the publisher the shown version's signed statement names


def signer_of(record: VersionRecord) -> str | None:
    """The publisher handle in a version's stored statement (the registry checked it at publish)."""
    import json

    if record.statement is None:
        return None
    publisher = json.loads(record.statement).get("publisher")
    return publisher if isinstance(publisher, str) else None


@dataclass(frozen=True)
class UserPage:
    handle: str
    display_name: str
    items: list[Listed]


class Site:
    """The pages' view of one registry: its caches and the functions that fill each page."""

    def __init__(self, reg: Registry) -> None:
        self.reg = reg
        self.catalogue = Catalogue(reg)
        self.mains = MainFiles(reg)

    def listed(self, pkg: PackageRecord) -> Listed:
        entry = self.reg.versions.load(pkg.kind, pkg.slug)
        return Listed(pkg, entry.latest.version if entry is not None and entry.latest is not None else None)

    def home(self) -> Home:
        packages = self.catalogue.packages()
        counts = {kind: 0 for kind in KIND_ORDER}
        for pkg in packages:
            counts[pkg.kind] += 1
        popular = sorted(packages, key=lambda p: (-p.downloads, p.slug))[:SHORT_LIST]
        return Home(
            list(counts.items()),
            [self.listed(p) for p in packages[:SHORT_LIST]],
            [self.listed(p) for p in popular],
        )

    def search(self, query: str, kind: Kind | None, page: int) -> Results:
        """Ranked like the search API; an empty query lists everything, most recently updated first."""
        packages = [p for p in self.catalogue.packages() if kind is None or p.kind is kind]
        hits = [r for _, r in rank(query, packages)] if query.strip() else packages
        pages = max(1, math.ceil(len(hits) / PAGE_SIZE))
        page = min(max(1, page), pages)
        shown = hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return Results(query, kind, page, pages, len(hits), [self.listed(p) for p in shown])

    def package(self, kind: Kind, slug: str, version: str | None) -> PackagePage:
        entry = self.reg.versions.load(kind, slug)
        pkg = self.reg.storage.get_package(kind, slug) if entry is not None else None
        if entry is None or pkg is None or not entry.records:
            raise NotFound(f"There is no {kind.value} named {slug!r} in this registry.")
        record = entry.by_version.get(version.strip().removeprefix("v")) if version else entry.latest
        if record is None and version:
            raise NotFound(f"{kind.value} {slug!r} has no version {version!r}.")
        record = record or entry.records[-1]  # every version yanked: show the newest anyway
        deps = [Dependency(e, self.reg.versions.load(e.kind, e.slug) is not None) for e in edges(kind, record)]
        pinned = version is not None and record is not entry.latest
        return PackagePage(
            package=pkg,
            record=record,
            latest=entry.latest,
            versions=list(reversed(entry.records)),
            main=self.mains.get(kind, record),
            dependencies=deps,
            used_by=[self.listed(p) for p in self.catalogue.used_by(kind, slug)],
            strawpot_command=f"strawpot install {kind.value} {slug}" + (f"=={record.version}" if pinned else ""),
            strawhub_command=f"strawhub install {kind.value} {slug}" + (f" --version {record.version}" if pinned else ""),
            signer=signer_of(record),
        )

    def user(self, handle: str) -> UserPage:
        user = self.reg.storage.user_by_handle(handle)
        if user is None:
            raise NotFound(f"There is no user named {handle!r} in this registry.")
        mine = [p for p in self.catalogue.packages() if p.owner.id == user.id]
        return UserPage(user.handle, user.display_name, [self.listed(p) for p in mine])
