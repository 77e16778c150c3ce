"""The partial solution: the solver's ordered assignments (decisions and derivations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resolver.term import Relation, Term
from resolver.version_set import VersionSet

if TYPE_CHECKING:
    from resolver.incompatibility import Incompatibility
    from resolver.version import Version

__all__ = ["Assignment", "PartialSolution"]


class Assignment:
    """A term in the partial solution: a decision (`cause` is None) or a derivation."""

    __slots__ = ("cause", "decision_level", "index", "term")

    def __init__(self, term: Term, decision_level: int, index: int, cause: Incompatibility | None) -> None:
        self.term = term
        self.decision_level = decision_level
        self.index = index
        self.cause = cause

    @property
    def is_decision(self) -> bool:
        return self.cause is None

    def __repr__(self) -> str:
        kind = "decision" if self.cause is None else "derivation"
        return f"<{kind} {self.term} @{self.decision_level}#{self.index}>"


class PartialSolution:
    """Ordered assignments, with per-package indexes and accumulated terms.

    See the "Partial Solution" section of dart-lang/pub ``doc/solver.md``. Assignments are also
    indexed by package, and the intersection of each package's assignments is kept up to date, so
    relations and satisfiers are computed from one package's assignments, never the whole list.
    """

    def __init__(self) -> None:
        self._assignments: list[Assignment] = []
        self._by_package: dict[str, list[Assignment]] = {}
        self._decisions: dict[str, Version] = {}
        self._terms: dict[str, Term] = {}  # intersection of each package's assignments
        self._pending: dict[str, None] = {}  # positive term and no decision (insertion ordered)
        self._changed: set[str] = set()  # packages whose term changed since `drain_changed`
        self.attempted_solutions = 1
        self._backtracking = False

    @property
    def decision_level(self) -> int:
        return len(self._decisions)

    @property
    def decisions(self) -> dict[str, Version]:
        """The version decided for each package (a copy)."""
        return dict(self._decisions)

    def pending(self) -> list[str]:
        """Packages that must be selected (positive term) but have no decision yet."""
        return list(self._pending)

    def is_pending(self, package: str) -> bool:
        return package in self._pending

    def drain_changed(self) -> set[str]:
        """The packages whose accumulated term changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def term(self, package: str) -> Term | None:
        """The intersection of every assignment about `package`, or None if there is none."""
        return self._terms.get(package)

    def decide(self, package: str, version: Version) -> None:
        """Select `version` of `package`, opening a new decision level."""
        if self._backtracking:
            self.attempted_solutions += 1
        self._backtracking = False
        self._decisions[package] = version
        self._assign(Term(package, VersionSet.singleton(version)), None)

    def derive(self, term: Term, cause: Incompatibility) -> None:
        """Add `term` as a consequence of `cause` at the current decision level."""
        self._assign(term, cause)

    def _assign(self, term: Term, cause: Incompatibility | None) -> None:
        assignment = Assignment(term, self.decision_level, len(self._assignments), cause)
        self._assignments.append(assignment)
        self._by_package.setdefault(term.package, []).append(assignment)
        self._register(assignment)

    def _register(self, assignment: Assignment) -> None:
        package = assignment.term.package
        previous = self._terms.get(package)
        term = assignment.term if previous is None else previous.intersect(assignment.term)
        self._terms[package] = term
        self._changed.add(package)
        if term.positive and package not in self._decisions:
            self._pending[package] = None
        else:
            self._pending.pop(package, None)

    def backtrack(self, decision_level: int) -> None:
        """Remove every assignment made after `decision_level`."""
        self._backtracking = True
        touched: set[str] = set()
        while self._assignments and self._assignments[-1].decision_level > decision_level:
            removed = self._assignments.pop()
            package = removed.term.package
            touched.add(package)
            self._by_package[package].pop()
            if removed.cause is None:
                del self._decisions[package]
        self._changed.update(touched)
        for package in touched:
            self._terms.pop(package, None)
            self._pending.pop(package, None)
            for assignment in self._by_package[package]:
                self._register(assignment)

    def relation(self, term: Term) -> Relation:
        """Whether the assignments satisfy, contradict or are inconclusive for `term`."""
        accumulated = self._terms.get(term.package)
        if accumulated is None:
            return Relation.INCONCLUSIVE
        return accumulated.relation(term)

    def satisfies(self, term: Term) -> bool:
        return self.relation(term) is Relation.SATISFIED

    def satisfier(self, term: Term) -> Assignment:
        """The earliest assignment such that the assignments up to it satisfy `term`."""
        accumulated: Term | None = None
        for assignment in self._by_package.get(term.package, ()):
            accumulated = assignment.term if accumulated is None else accumulated.intersect(assignment.term)
            if accumulated.satisfies(term):
                return assignment
        raise AssertionError(f"[bug] {term} is not satisfied by the partial solution")
