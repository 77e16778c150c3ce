"""`strawpot audit`'s findings: what is wrong with the locked versions, each from one producer over what the
registry says (yanked flags, publish times, advisories).

A producer is a function from `Facts` to findings; `PRODUCERS` lists them, so another check (an unsigned package,
a changed signer) is one more function, and the command, its JSON and its exit code stay as they are.
"""

from __future__ import annotations

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


PRODUCERS: tuple[Callable[[Facts], Iterable[Finding]], ...] = (yanked, advised, too_young)


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
