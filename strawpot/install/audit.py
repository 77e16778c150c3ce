"""`strawpot audit`'s findings: what is wrong with the locked versions, each from one producer over the lock and what
the registry says (yanked flags, publish times, advisories, signed statements); `PRODUCERS` lists them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub_client import PackageVersions
from strawpot.model.advisory import SEVERITIES, affects, severity_rank
from strawpot.model.display import short_text, terminal_safe
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedPackage, Lockfile

YANKED_SEVERITY = "high"  # a yanked version was withdrawn by its publisher or an admin: treat it as a known problem
YOUNG_SEVERITY = "moderate"  # published more recently than [install] min_release_age: not yet vetted by time
# Nobody vouches for who published an unsigned version; after a signed one it is how a leaked token publishes.
UNSIGNED_SEVERITY, UNSIGNED_AFTER_SIGNED_SEVERITY = "low", "high"
# Another account signed than the one that signed the version before; the same account's new key is a rotation.
SIGNER_CHANGED_SEVERITY, KEY_ROTATED_SEVERITY = "high", "low"


@dataclass(frozen=True)
class Finding:
    """One problem of one locked package; `problem` names the producer (yanked, advisory, too_young)."""

    kind: Kind
    name: str
    version: str
    problem: str
    severity: str
    summary: str
    advisory_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "name": self.name, "version": self.version, "problem": self.problem,
                "severity": self.severity, "summary": self.summary, "advisory_id": self.advisory_id}


@dataclass(frozen=True)
class Advice:
    """An advisory as the registry sent it, checked."""

    id: int
    kind: Kind
    slug: str
    affected: str
    severity: str
    summary: str


@dataclass
class Facts:
    """What the producers read: the lock's registry packages and the registry's answers about them."""

    packages: tuple[LockedPackage, ...]
    versions: Mapping[tuple[Kind, str], PackageVersions]
    advisories: list[Advice] = field(default_factory=list)
    min_age: float = 0.0  # seconds; 0: no cooldown
    min_age_text: str = ""
    now: float = field(default_factory=time.time)


def yanked(facts: Facts) -> Iterable[Finding]:
    for pkg in facts.packages:
        found = facts.versions.get(pkg.key)
        info = next((v for v in found.versions if v.version == pkg.version), None) if found else None
        if info is not None and info.yanked:
            yield Finding(pkg.kind, pkg.name, pkg.version, "yanked", YANKED_SEVERITY,
                          "this version was yanked from the registry; `strawpot update KIND SLUG` moves off it")


def advised(facts: Facts) -> Iterable[Finding]:
    for pkg in facts.packages:
        for advice in facts.advisories:
            if advice.kind is pkg.kind and advice.slug == pkg.name and affects(advice.affected, pkg.version):
                yield Finding(pkg.kind, pkg.name, pkg.version, "advisory", advice.severity,
                              f"{advice.summary} (affects {advice.affected})", advice.id)


def too_young(facts: Facts) -> Iterable[Finding]:
    if facts.min_age <= 0:
        return
    for pkg in facts.packages:
        found = facts.versions.get(pkg.key)
        info = next((v for v in found.versions if v.version == pkg.version), None) if found else None
        if info is not None and info.created_at is not None:
            age = facts.now - info.created_at / 1000
            if age < facts.min_age:
                from strawpot.model.durations import say_age

                yield Finding(pkg.kind, pkg.name, pkg.version, "too_young", YOUNG_SEVERITY,
                              f"published {say_age(age)} ago, younger than [install] min_release_age "
                              f"({facts.min_age_text})")


def unsigned(facts: Facts) -> Iterable[Finding]:
    for pkg in facts.packages:
        if pkg.signer is not None or _statement_of(facts, pkg, pkg.version) is not None:
            continue
        before = _signed_before(facts, pkg)
        if before is None:
            yield Finding(pkg.kind, pkg.name, pkg.version, "unsigned", UNSIGNED_SEVERITY,
                          "no publisher signed this version: nothing proves who published it")
        else:
            yield Finding(pkg.kind, pkg.name, pkg.version, "unsigned", UNSIGNED_AFTER_SIGNED_SEVERITY,
                          f"this version is unsigned, but {before.version} was signed by {before.publisher}: an "
                          "unsigned upload of a signed package (as a leaked token would publish)")


def signer_changed(facts: Facts) -> Iterable[Finding]:
    for pkg in facts.packages:
        before = _signed_before(facts, pkg) if pkg.signer is not None else None
        if pkg.signer is None or before is None:
            continue
        handle, key = _shown(pkg.signer.handle), _shown(pkg.signer.key)
        if before.publisher != handle:
            yield Finding(pkg.kind, pkg.name, pkg.version, "signer_changed", SIGNER_CHANGED_SEVERITY,
                          f"signed by {handle}, but {before.version} was signed by {before.publisher}")
        elif before.key != key:
            yield Finding(pkg.kind, pkg.name, pkg.version, "signer_changed", KEY_ROTATED_SEVERITY,
                          f"signed by a new key of {handle} ({key}); {before.version} was signed by {before.key}")


@dataclass(frozen=True)
class _Signed:
    """An earlier version's signer as its statement names it (what the registry serves; shown, not trusted)."""

    version: str
    publisher: str
    key: str


def _statement_of(facts: Facts, pkg: LockedPackage, version: str) -> object | None:
    """The registry's signed statement of one version of `pkg`, or None when it serves none."""
    found = facts.versions.get(pkg.key)
    info = next((v for v in found.versions if v.version == version), None) if found else None
    return None if info is None else info.provenance


def _signed_before(facts: Facts, pkg: LockedPackage) -> _Signed | None:
    """The newest version of `pkg` older than the locked one that the registry shows signed, if any."""
    from resolver import InvalidVersion, Version

    found = facts.versions.get(pkg.key)
    try:
        locked = Version.parse(pkg.version)
    except InvalidVersion:
        return None
    best: tuple[Version, _Signed] | None = None
    for info in found.versions if found else ():
        try:
            version = Version.parse(info.version)
        except InvalidVersion:
            continue
        if info.provenance is None or not version < locked or (best is not None and version <= best[0]):
            continue
        try:
            publisher = json.loads(info.provenance.statement).get("publisher")
        except (ValueError, AttributeError):
            publisher = None
        shown = _shown(publisher) if isinstance(publisher, str) else "an unreadable statement"
        best = (version, _Signed(_shown(info.version), shown, _shown(info.provenance.key_id)))
    return None if best is None else best[1]


def _shown(text: str) -> str:
    """Registry or lock text as a finding may quote it: one inert line, bounded."""
    return short_text(terminal_safe(" ".join(text.split())), 200)


PRODUCERS: tuple[Callable[[Facts], Iterable[Finding]], ...] = (yanked, advised, too_young, unsigned, signer_changed)


def audit(facts: Facts) -> list[Finding]:
    """Every producer's findings, the most severe first."""
    found = [finding for producer in PRODUCERS for finding in producer(facts)]
    return sorted(found, key=lambda f: (-severity_rank(f.severity), f.kind.value, f.name, f.problem))


def read_advisories(answer: object) -> tuple[list[Advice], int]:
    """The advisories of a `GET /advisories` answer (hostile input: every field checked) and how many entries
    could not be read (left out, and said)."""
    items = answer.get("advisories") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        raise ValueError("the registry's advisories answer has no 'advisories' list")
    good: list[Advice] = []
    bad = 0
    for item in items:
        try:
            good.append(_advice(item))
        except (KeyError, TypeError, ValueError):
            bad += 1
    return good, bad


def _advice(item: object) -> Advice:
    if not isinstance(item, dict):
        raise TypeError("not an object")
    fields = {key: item[key] for key in ("kind", "slug", "range", "severity", "summary")}
    if not all(isinstance(v, str) for v in fields.values()) or type(item.get("id")) is not int:
        raise TypeError("a field has the wrong type")
    from strawpot.model.advisory import affected_set
    from strawpot.model.package import slug_error

    if slug_error(fields["slug"]) or fields["severity"] not in SEVERITIES:
        raise ValueError("bad slug or severity")
    affected_set(fields["range"])
    summary = short_text(terminal_safe(" ".join(fields["summary"].split())), 500)
    return Advice(item["id"], Kind.parse(fields["kind"]), fields["slug"], fields["range"], fields["severity"], summary)


def registry_packages(lock: Lockfile) -> tuple[LockedPackage, ...]:
    """The lock's packages that came from a registry (path sources have nothing to audit there)."""
    from strawpot.install.local import is_path_source

    return tuple(p for p in lock.packages if not is_path_source(p))
