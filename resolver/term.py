"""Terms: a statement that a package's selected version is (or is not) in a version set."""

from __future__ import annotations

from enum import Enum

from resolver.version_set import VersionSet

__all__ = ["Relation", "Term"]


class Relation(Enum):
    """How a set of assignments relates to a term."""

    SATISFIED = "satisfied"  # the term must be true
    CONTRADICTED = "contradicted"  # the term must be false
    INCONCLUSIVE = "inconclusive"  # either may happen


class Term:
    """``package in versions`` when `positive`, otherwise ``not (package in versions)``.

    See the "Term" section of dart-lang/pub ``doc/solver.md``. A positive term ``foo ^1.0.0`` is
    true when a version of ``foo`` in ``^1.0.0`` is selected; a negative term ``not foo ^1.0.0`` is
    true when ``foo`` is not selected at all or a version outside ``^1.0.0`` is.
    """

    __slots__ = ("package", "positive", "versions")

    def __init__(self, package: str, versions: VersionSet, positive: bool = True) -> None:
        self.package = package
        self.versions = versions
        self.positive = positive

    def negate(self) -> Term:
        """The term that is true exactly when this one is false."""
        return Term(self.package, self.versions, not self.positive)

    def intersect(self, other: Term) -> Term:
        """The term true when both are (same package only)."""
        a, b = self.versions, other.versions
        if self.positive and other.positive:
            return Term(self.package, a.intersection(b), True)
        if self.positive:
            return Term(self.package, a.difference(b), True)
        if other.positive:
            return Term(self.package, b.difference(a), True)
        return Term(self.package, a.union(b), False)

    def difference(self, other: Term) -> Term:
        """The term true when this one is and `other` is not."""
        return self.intersect(other.negate())

    def is_empty(self) -> bool:
        """Whether the term can never be true (a positive term with no versions)."""
        return self.positive and self.versions.is_empty()

    def satisfies(self, other: Term) -> bool:
        """Whether this term being true implies `other` is true."""
        return self.relation(other) is Relation.SATISFIED

    def relation(self, other: Term) -> Relation:
        """How `other` relates to this term taken as the accumulated knowledge about its package."""
        a, b = self.versions, other.versions
        if self.positive:
            single = a.single_version()
            if single is not None:  # the common case: a decided package
                inside = b.contains(single)
                if other.positive:
                    return Relation.SATISFIED if inside else Relation.CONTRADICTED
                return Relation.CONTRADICTED if inside else Relation.SATISFIED
        common = a.intersection(b)
        if self.positive:
            if other.positive:
                if common == a:
                    return Relation.SATISFIED
                return Relation.CONTRADICTED if common.is_empty() else Relation.INCONCLUSIVE
            if common.is_empty():
                return Relation.SATISFIED
            return Relation.CONTRADICTED if common == a else Relation.INCONCLUSIVE
        # A negative term allows the package to be absent: it never satisfies a positive term
        # and never contradicts a negative one.
        if other.positive:
            return Relation.CONTRADICTED if common == b else Relation.INCONCLUSIVE
        return Relation.SATISFIED if common == b else Relation.INCONCLUSIVE

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Term):
            return NotImplemented
        return (self.package, self.positive, self.versions) == (other.package, other.positive, other.versions)

    def __hash__(self) -> int:
        return hash((self.package, self.positive, self.versions))

    def __repr__(self) -> str:
        return f"Term({self.package!r}, {str(self.versions)!r}, positive={self.positive})"

    def __str__(self) -> str:
        return f"{'' if self.positive else 'not '}{self.package} {self.versions}"
