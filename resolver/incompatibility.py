"""Incompatibilities: sets of terms that cannot all be true, and the causes that justify them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from resolver.provider import Dependency
from resolver.term import Term
from resolver.version import Version
from valueclass import Slotted

__all__ = [
    "ROOT",
    "Cause",
    "ConflictCause",
    "DependencyCause",
    "Incompatibility",
    "NoVersionsCause",
    "RootCause",
    "UnavailableCause",
]

ROOT = "\x00root"
"""The package id the solver uses for the project itself (never a real package id)."""


class Cause(Slotted):
    """Why an incompatibility holds; equal to another of its class with the same fields (but `ConflictCause`)."""

    __slots__ = ()


class RootCause(Cause):
    """The root package must be selected."""

    __slots__ = ()


class DependencyCause(Cause):
    """The first term's versions depend on `dependency` (the second term is its negation)."""

    __slots__ = _fields = ("dependency",)
    dependency: Dependency

    def __init__(self, dependency: Dependency) -> None:
        object.__setattr__(self, "dependency", dependency)


class NoVersionsCause(Cause):
    """No selectable version matches the term; `skipped` lists matching versions left out and why, `others` the
    newest selectable versions outside the term (oldest first) of `other_count` there are."""

    __slots__ = _fields = ("skipped", "others", "other_count")
    skipped: tuple[tuple[Version, str], ...]
    others: tuple[Version, ...]
    other_count: int

    def __init__(self, skipped: tuple[tuple[Version, str], ...] = (), others: tuple[Version, ...] = (),
                 other_count: int = 0) -> None:
        object.__setattr__(self, "skipped", skipped)
        object.__setattr__(self, "others", others)
        object.__setattr__(self, "other_count", other_count)


class UnavailableCause(Cause):
    """The versions of the package, or the dependencies of a version, could not be obtained."""

    __slots__ = _fields = ("reason",)
    reason: str

    def __init__(self, reason: str) -> None:
        object.__setattr__(self, "reason", reason)


class ConflictCause(Cause):
    """Derived by resolution from `conflict` and `other`; each one is itself (compared and hashed by identity)."""

    __slots__ = _fields = ("conflict", "other")
    conflict: Incompatibility
    other: Incompatibility
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, conflict: Incompatibility, other: Incompatibility) -> None:
        object.__setattr__(self, "conflict", conflict)
        object.__setattr__(self, "other", other)


class Incompatibility:
    """Terms that are not all allowed to be true, normalised to one term per package.

    Identity is by object: two incompatibilities with the same terms and different causes
    are different nodes of a derivation tree.

    See the "Incompatibility" section of dart-lang/pub ``doc/solver.md``. External causes state a
    fact (a dependency, a missing version, an unavailable package); a `ConflictCause` links a derived
    incompatibility to the two it was derived from, which makes the derivation tree `report` explains.
    """

    __slots__ = ("cause", "terms")

    def __init__(self, terms: Iterable[Term], cause: Cause) -> None:
        terms = list(terms)
        # Positive root terms are always satisfied, so derived incompatibilities drop them
        # (this also keeps the root package out of explanations).
        if len(terms) != 1 and isinstance(cause, ConflictCause):
            terms = [t for t in terms if not (t.positive and t.package == ROOT)]
        if len(terms) > 2 or (len(terms) == 2 and terms[0].package == terms[1].package):
            merged: dict[str, Term] = {}
            for term in terms:
                previous = merged.get(term.package)
                merged[term.package] = term if previous is None else previous.intersect(term)
            terms = list(merged.values())
        self.terms: tuple[Term, ...] = tuple(terms)
        self.cause = cause

    @property
    def is_failure(self) -> bool:
        """Whether this incompatibility says that version solving as a whole failed."""
        return not self.terms or (len(self.terms) == 1 and self.terms[0].package == ROOT)

    @property
    def is_derived(self) -> bool:
        """Whether this was derived from two other incompatibilities (else it is external)."""
        return isinstance(self.cause, ConflictCause)

    def term_for(self, package: str) -> Term | None:
        """This incompatibility's term about `package`, if any."""
        for term in self.terms:
            if term.package == package:
                return term
        return None

    def external_incompatibilities(self) -> Iterator[Incompatibility]:
        """The leaves of this incompatibility's derivation tree (each once, depth first)."""
        seen: set[int] = set()
        stack: list[Incompatibility] = [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node.cause, ConflictCause):
                stack.extend((node.cause.other, node.cause.conflict))
            else:
                yield node

    def __repr__(self) -> str:
        terms = ", ".join(str(t) for t in self.terms)
        return f"<Incompatibility {{{terms}}} {type(self.cause).__name__}>"
