"""The benchmark registries behind resolvelib (pip's resolver), for a side-by-side with our PubGrub solver.

Requirements are (package, VersionSet) with our own specifier parsing, so both solvers read the same
constraints; candidates are tried newest first, and the package with the fewest matching candidates is
decided first (the same heuristic as our solver), so a difference in time is a difference in algorithm.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

from resolver import Version, VersionSet, parse_specifier

Registry = dict[str, dict[str, dict[str, str]]]


@dataclass(frozen=True)
class Requirement:
    name: str
    versions: VersionSet


@dataclass(frozen=True)
class Candidate:
    name: str
    version: Version


class RegistryProvider(AbstractProvider):  # type: ignore[type-arg]
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._sorted = {n: sorted((Version.parse(v) for v in vs), reverse=True) for n, vs in registry.items()}
        self._specs: dict[str, VersionSet] = {}

    def spec(self, text: str) -> VersionSet:
        if text not in self._specs:
            self._specs[text] = parse_specifier(text)
        return self._specs[text]

    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        return requirement_or_candidate.name

    def get_preference(self, identifier: str, resolutions: Mapping[str, Any], candidates: Mapping[str, Iterator[Any]],
                       information: Mapping[str, Iterator[Any]], backtrack_causes: Sequence[Any]) -> int:
        return sum(1 for _ in candidates[identifier])

    def find_matches(self, identifier: str, requirements: Mapping[str, Iterator[Requirement]],
                     incompatibilities: Mapping[str, Iterator[Candidate]]) -> list[Candidate]:
        wanted = list(requirements[identifier])
        bad = {c.version for c in incompatibilities[identifier]}
        return [Candidate(identifier, v) for v in self._sorted.get(identifier, ())
                if v not in bad and all(v in r.versions for r in wanted)]

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        return candidate.version in requirement.versions

    def get_dependencies(self, candidate: Candidate) -> Iterable[Requirement]:
        deps = self.registry[candidate.name][str(candidate.version)]
        return [Requirement(name, self.spec(text)) for name, text in deps.items()]


def solve(registry: Registry, roots: Mapping[str, str], max_rounds: int = 200_000) -> dict[str, Version] | None:
    """resolvelib's answer ({package: version}), or None when it finds none (or gives up)."""
    provider = RegistryProvider(registry)
    requirements = [Requirement(name, provider.spec(text)) for name, text in roots.items()]
    try:
        result = Resolver(provider, BaseReporter()).resolve(requirements, max_rounds=max_rounds)
    except (ResolutionImpossible, ResolutionTooDeep):
        return None
    return {name: candidate.version for name, candidate in result.mapping.items()}
