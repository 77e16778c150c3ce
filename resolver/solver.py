"""The PubGrub version solver (dart-lang/pub ``doc/solver.md``): propagation, decisions, conflict resolution."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from resolver.errors import NoSolution
from resolver.incompatibility import (
    ROOT,
    ConflictCause,
    DependencyCause,
    Incompatibility,
    NoVersionsCause,
    RootCause,
    UnavailableCause,
)
from resolver.partial_solution import PartialSolution
from resolver.provider import Candidate, Dependency, DependencyProvider, SupportsPrefetch, Unavailable
from resolver.term import Relation, Term
from resolver.version import Version
from resolver.version_set import VersionSet

__all__ = ["VersionSolver", "solve"]

ROOT_VERSION = Version(0, 0, 0)
_LAST = 1 << 62  # priority of packages that should be decided after every other one
_CONFLICT = object()
_SHOWN_OTHERS = 5  # versions outside an unsatisfiable term that its explanation names ("x has 1.0.0, 2.0.0")


class _Versions:
    """A package's candidates, sorted, with a lookup by version."""

    __slots__ = ("ascending", "by_version", "descending", "special")

    def __init__(self, candidates: Iterable[Candidate]) -> None:
        by_version: dict[Version, Candidate] = {}
        for candidate in candidates:
            by_version.setdefault(candidate.version, candidate)
        self.by_version = by_version
        self.ascending: list[Version] = sorted(by_version)
        self.descending: list[Version] = self.ascending[::-1]
        # Versions that are only selectable in some circumstances (yanked, pre-release).
        self.special = [v for v in self.ascending if by_version[v].yanked or v.is_prerelease]

    def count_in(self, versions: VersionSet) -> int:
        """How many candidates the set holds (binary search per interval)."""
        ordered = self.ascending
        total = 0
        for low, high in versions.intervals:
            start = 0 if low is None else bisect.bisect_left(ordered, low)
            end = len(ordered) if high is None else bisect.bisect_left(ordered, high)
            total += max(0, end - start)
        return total


class VersionSolver:
    """One resolution: build it, call `solve()` once.

    The main loop alternates unit propagation ("The Algorithm" → "Unit Propagation") and decision
    making ("Decision Making"); a satisfied incompatibility triggers conflict resolution ("Conflict
    Resolution"), which derives and learns the root cause and backjumps. When the root cause says
    the root package itself cannot be selected, `NoSolution` carries the derivation tree (data only;
    `resolver.report` writes the explanation).

    Choices the spec leaves open, made here:

    - Decisions go to the pending package with the fewest selectable versions (ties: the package
      discovered first, which follows the dependency graph breadth first), and pick its highest
      selectable version, or the `locked` version when the term allows it.
    - Yanked versions are never selectable, except the locked version of a package.
    - Pre-release versions are selectable for a package only once some dependency on it (from the
      root or from any version the solver has looked at) names a pre-release in its specifier, or
      when it is the package's locked version. The opt-in is per package and never withdrawn. A
      package that only pre-releases could satisfy is decided last, so that dependencies naming a
      pre-release are seen first. (Limit: a "no versions" fact learned before an opt-in that only
      a later branch of the search reveals is not revisited.)
    - Dependencies of adjacent versions that are identical are merged into one incompatibility over
      the range of those versions, as pub does, which keeps explanations short ("foo >=1.1.0 depends
      on …", "every version of foo depends on …").
    """

    def __init__(
        self,
        provider: DependencyProvider,
        root_dependencies: Mapping[str, Dependency],
        *,
        locked: Mapping[str, Version] | None = None,
        root_name: str = "root",
        display_name: Callable[[str], str] | None = None,
    ) -> None:
        self._provider = provider
        self._root_dependencies = list(root_dependencies.values())
        self._direct = frozenset(dep.package for dep in self._root_dependencies)
        self._locked = dict(locked or {})
        self._root_name = root_name
        self._display_name = display_name
        self._solution = PartialSolution()
        self._incompatibilities: dict[str, list[Incompatibility]] = {}
        self._versions: dict[str, _Versions | Unavailable] = {}
        self._dependencies: dict[tuple[str, Version], dict[str, Dependency] | Unavailable] = {}
        self._listed: set[tuple[str, VersionSet, Dependency]] = set()
        self._ranges: dict[tuple[str, Version, str], VersionSet] = {}
        # Incompatibilities known to be contradicted, with the decision level where that was seen.
        self._contradicted: dict[Incompatibility, int] = {}
        self._prerelease_ok: set[str] = set()
        self._priorities: dict[str, tuple[int, int, int]] = {}
        self._queue: list[tuple[tuple[int, int, int], str]] = []
        self._dirty: set[str] = set()
        self._discovered: dict[str, int] = {ROOT: 0}
        self._prefetched: set[str] = set()
        self._prefetch = provider.prefetch if isinstance(provider, SupportsPrefetch) else None

    @property
    def attempted_solutions(self) -> int:
        """How many sets of decisions were tried (1 when no backtracking was needed)."""
        return self._solution.attempted_solutions

    def solve(self) -> dict[str, Version]:
        """The selected version of every package (the root excluded), or raise `NoSolution`."""
        self._request([dep.package for dep in self._root_dependencies])
        self._add_incompatibility(Incompatibility([Term(ROOT, VersionSet.full(), False)], RootCause()))
        next_package: str | None = ROOT
        while next_package is not None:
            self._propagate(next_package)
            next_package = self._choose_package_version()
        return {package: version for package, version in self._solution.decisions.items() if package != ROOT}

    # -- unit propagation -----------------------------------------------------------------------

    def _propagate(self, package: str) -> None:
        changed: dict[str, None] = {package: None}
        while changed:
            package = next(iter(changed))
            del changed[package]
            incompatibilities = self._incompatibilities.get(package, [])
            # Newest first: conflict resolution tends to produce more general ones later.
            contradicted = self._contradicted
            for index in range(len(incompatibilities) - 1, -1, -1):
                incompatibility = incompatibilities[index]
                if incompatibility in contradicted:
                    continue
                result = self._propagate_incompatibility(incompatibility)
                if result is _CONFLICT:
                    root_cause = self._resolve_conflict(incompatibility)
                    changed.clear()
                    derived = self._propagate_incompatibility(root_cause)
                    assert isinstance(derived, str), "[bug] the root cause must be almost satisfied"
                    changed[derived] = None
                    break
                if result is not None:
                    assert isinstance(result, str)
                    changed[result] = None

    def _propagate_incompatibility(self, incompatibility: Incompatibility) -> str | object | None:
        """Derive the negation of the only inconclusive term; return its package, `_CONFLICT` or None."""
        unsatisfied: Term | None = None
        for term in incompatibility.terms:
            relation = self._solution.relation(term)
            if relation is Relation.CONTRADICTED:
                # Stays contradicted until we backtrack below the current decision level.
                self._contradicted[incompatibility] = self._solution.decision_level
                return None
            if relation is Relation.INCONCLUSIVE:
                if unsatisfied is not None:
                    return None
                unsatisfied = term
        if unsatisfied is None:
            return _CONFLICT
        self._solution.derive(unsatisfied.negate(), incompatibility)
        self._contradicted[incompatibility] = self._solution.decision_level
        return unsatisfied.package

    # -- conflict resolution --------------------------------------------------------------------

    def _resolve_conflict(self, incompatibility: Incompatibility) -> Incompatibility:
        """Find the root cause of a satisfied incompatibility, learn it and backjump."""
        learned = False
        while not incompatibility.is_failure:
            most_recent_term: Term | None = None
            most_recent = None
            difference: Term | None = None
            previous_level = 1
            for term in incompatibility.terms:
                satisfier = self._solution.satisfier(term)
                if most_recent is None:
                    most_recent_term, most_recent = term, satisfier
                elif most_recent.index < satisfier.index:
                    previous_level = max(previous_level, most_recent.decision_level)
                    most_recent_term, most_recent, difference = term, satisfier, None
                else:
                    previous_level = max(previous_level, satisfier.decision_level)
                if most_recent_term is term:
                    # If the satisfier alone does not satisfy the term, an earlier assignment
                    # satisfies the rest: it bounds how far back we can jump.
                    rest = most_recent.term.difference(term)
                    difference = None if rest.is_empty() else rest
                    if difference is not None:
                        earlier = self._solution.satisfier(difference.negate())
                        previous_level = max(previous_level, earlier.decision_level)
            assert most_recent is not None and most_recent_term is not None
            if previous_level < most_recent.decision_level or most_recent.cause is None:
                self._solution.backtrack(previous_level)
                self._contradicted = {
                    i: level for i, level in self._contradicted.items() if level <= previous_level
                }
                if learned:
                    self._add_incompatibility(incompatibility)
                return incompatibility
            cause = most_recent.cause
            terms = [t for t in incompatibility.terms if t is not most_recent_term]
            terms.extend(t for t in cause.terms if t.package != most_recent.term.package)
            if difference is not None:
                terms.append(difference.negate())
            incompatibility = Incompatibility(terms, ConflictCause(incompatibility, cause))
            learned = True
        raise NoSolution(incompatibility, root_name=self._root_name, display_name=self._display_name)

    # -- decision making ------------------------------------------------------------------------

    def _choose_package_version(self) -> str | None:
        """Decide one pending package's version (or learn why none fits); None when done."""
        package = self._next_package()
        if package is None:
            return None
        term = self._solution.term(package)
        assert term is not None and term.positive
        if package == ROOT:
            version = ROOT_VERSION
        else:
            versions = self._candidates(package)
            if isinstance(versions, Unavailable):
                self._add_incompatibility(
                    Incompatibility([Term(package, VersionSet.full())], UnavailableCause(versions.reason))
                )
                return package
            chosen = self._pick(package, term.versions, versions)
            if chosen is None:
                skipped = self._skipped(package, term.versions, versions)
                others = [v for v in versions.descending if not term.versions.contains(v)
                          and self._selectable(package, v, versions.by_version[v])]
                cause = NoVersionsCause(skipped, tuple(reversed(others[:_SHOWN_OTHERS])), len(others))
                self._add_incompatibility(Incompatibility([Term(package, term.versions)], cause))
                return package
            version = chosen
        conflict = False
        for incompatibility in self._incompatibilities_for(package, version):
            self._add_incompatibility(incompatibility)
            conflict = conflict or all(
                t.package == package or self._solution.satisfies(t) for t in incompatibility.terms
            )
        if not conflict:
            self._solution.decide(package, version)
        return package

    def _selectable(self, package: str, version: Version, candidate: Candidate) -> bool:
        if candidate.yanked or (version.is_prerelease and package not in self._prerelease_ok):
            return self._locked.get(package) == version
        return True

    def _pick(self, package: str, allowed: VersionSet, versions: _Versions) -> Version | None:
        locked = self._locked.get(package)
        if locked is not None and locked in versions.by_version and allowed.contains(locked):
            return locked
        for version in versions.descending:
            if allowed.contains(version) and self._selectable(package, version, versions.by_version[version]):
                return version
        return None

    def _skipped(
        self, package: str, allowed: VersionSet, versions: _Versions
    ) -> tuple[tuple[Version, str], ...]:
        skipped: list[tuple[Version, str]] = []
        for version in versions.descending:
            if allowed.contains(version):
                reason = "yanked" if versions.by_version[version].yanked else "a pre-release"
                skipped.append((version, reason))
        return tuple(skipped)

    def _next_package(self) -> str | None:
        """The pending package with the best priority, from a heap with lazy invalidation."""
        dirty = self._solution.drain_changed()
        dirty.update(self._dirty)
        self._dirty.clear()
        for package in dirty:
            self._priorities.pop(package, None)
            if self._solution.is_pending(package):
                heapq.heappush(self._queue, (self._priority(package), package))
        while self._queue:
            priority, package = self._queue[0]
            if self._solution.is_pending(package) and self._priorities.get(package) == priority:
                return package
            heapq.heappop(self._queue)  # decided since, or its priority changed
        assert not self._solution.pending(), "[bug] a pending package is missing from the queue"
        return None

    def _priority(self, package: str) -> tuple[int, int, int]:
        """Packages with at most one selectable version and the root's direct dependencies first, then the
        fewest selectable versions, then the package discovered first (cached per term).

        Deciding direct dependencies early keeps them at their newest where any solution allows it (what the
        user asked for, as uv does): a conflict found later backtracks the transitive decisions first.

        A package whose only matching versions are pre-releases it has not opted in to goes
        last: deciding the others first may reveal a dependency that names a pre-release.
        """
        found = self._priorities.get(package)
        if found is None:
            count = self._count(package)
            if count == 0 and self._only_prereleases_match(package):
                count = _LAST
            direct = 0 if count <= 1 or package in self._direct else 1
            found = self._priorities[package] = (direct, count, self._discovered.get(package, 0))
        return found

    def _only_prereleases_match(self, package: str) -> bool:
        versions = self._candidates(package)
        term = self._solution.term(package)
        if isinstance(versions, Unavailable) or term is None or package in self._prerelease_ok:
            return False
        return any(
            v.is_prerelease and not versions.by_version[v].yanked and term.versions.contains(v)
            for v in versions.special
        )

    def _count(self, package: str) -> int:
        """How many selectable versions the package's current term allows."""
        if package == ROOT:
            return 1
        term = self._solution.term(package)
        assert term is not None
        versions = self._candidates(package)
        if isinstance(versions, Unavailable):
            return 0
        count = versions.count_in(term.versions)
        for version in versions.special:
            if term.versions.contains(version) and not self._selectable(
                package, version, versions.by_version[version]
            ):
                count -= 1
        return count

    # -- dependencies ---------------------------------------------------------------------------

    def _incompatibilities_for(self, package: str, version: Version) -> list[Incompatibility]:
        """The not-yet-listed incompatibilities that selecting `package` `version` brings in."""
        if package == ROOT:
            dependencies: Sequence[Dependency] = self._root_dependencies
        else:
            found = self._dependencies_of(package, version)
            if isinstance(found, Unavailable):
                single = Term(package, VersionSet.singleton(version))
                return [Incompatibility([single], UnavailableCause(found.reason))]
            dependencies = list(found.values())
        result: list[Incompatibility] = []
        for dependency in dependencies:
            self._discovered.setdefault(dependency.package, len(self._discovered))
            if dependency.allows_prerelease and dependency.package not in self._prerelease_ok:
                self._prerelease_ok.add(dependency.package)
                self._dirty.add(dependency.package)
            if dependency.package == package:
                if version in dependency.spec:
                    continue  # a package depending on a range holding itself adds nothing
                reason = f"it depends on itself with {dependency.text}"
                return [
                    Incompatibility([Term(package, VersionSet.singleton(version))], UnavailableCause(reason))
                ]
            depender = (
                VersionSet.full() if package == ROOT else self._depender_range(package, version, dependency)
            )
            key = (package, depender, dependency)
            if key in self._listed:
                continue
            self._listed.add(key)
            terms = [Term(package, depender), Term(dependency.package, dependency.spec, False)]
            result.append(Incompatibility(terms, DependencyCause(dependency)))
        self._request([dependency.package for dependency in dependencies])
        return result

    def _depender_range(self, package: str, version: Version, dependency: Dependency) -> VersionSet:
        """The adjacent versions of `package` around `version` that have the same `dependency`."""
        key = (package, version, dependency.package)
        found = self._ranges.get(key)
        if found is None:
            found = self._ranges[key] = self._compute_depender_range(package, version, dependency)
        return found

    def _compute_depender_range(self, package: str, version: Version, dependency: Dependency) -> VersionSet:
        versions = self._candidates(package)
        assert not isinstance(versions, Unavailable)
        ordered = versions.ascending
        index = bisect.bisect_left(ordered, version)
        low = index
        while low > 0 and self._has_dependency(package, ordered[low - 1], dependency):
            low -= 1
        high = index + 1
        while high < len(ordered) and self._has_dependency(package, ordered[high], dependency):
            high += 1
        return VersionSet(
            [(None if low == 0 else ordered[low], None if high == len(ordered) else ordered[high])]
        )

    def _has_dependency(self, package: str, version: Version, dependency: Dependency) -> bool:
        found = self._dependencies_of(package, version)
        return not isinstance(found, Unavailable) and found.get(dependency.package) == dependency

    def _dependencies_of(self, package: str, version: Version) -> dict[str, Dependency] | Unavailable:
        key = (package, version)
        found = self._dependencies.get(key)
        if found is None:
            result = self._provider.dependencies(package, version)
            found = result if isinstance(result, Unavailable) else {d.package: d for d in result.values()}
            self._dependencies[key] = found
        return found

    def _candidates(self, package: str) -> _Versions | Unavailable:
        found = self._versions.get(package)
        if found is None:
            result = self._provider.versions(package)
            found = result if isinstance(result, Unavailable) else _Versions(result)
            self._versions[package] = found
        return found

    def _request(self, packages: Iterable[str]) -> None:
        """Tell the provider which packages' metadata will be needed next."""
        if self._prefetch is None:
            return
        new = [p for p in dict.fromkeys(packages) if p not in self._prefetched and p not in self._versions]
        if new:
            self._prefetched.update(new)
            self._prefetch(new)

    def _add_incompatibility(self, incompatibility: Incompatibility) -> None:
        for term in incompatibility.terms:
            self._incompatibilities.setdefault(term.package, []).append(incompatibility)


def solve(
    provider: DependencyProvider,
    root_dependencies: Mapping[str, Dependency],
    *,
    locked: Mapping[str, Version] | None = None,
    root_name: str = "root",
    display_name: Callable[[str], str] | None = None,
) -> dict[str, Version]:
    """Choose one version of every package reachable from `root_dependencies`.

    `root_dependencies` is keyed by package id. `locked` holds preferred versions (tried first
    when allowed; a locked yanked or pre-release version stays selectable). Raises `NoSolution`
    whose text explains the failure, naming the root `root_name` and packages through
    `display_name` (default: the package id).
    """
    solver = VersionSolver(
        provider, root_dependencies, locked=locked, root_name=root_name, display_name=display_name
    )
    return solver.solve()
