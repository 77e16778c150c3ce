"""Tests of term algebra and relations (solver.md "Term"), checked against explicit version lists."""

from __future__ import annotations

import pytest

from resolver import Term, Version, parse_specifier
from resolver.term import Relation

UNIVERSE = [Version.parse(t) for t in ["0.9.0", "1.0.0", "1.5.0", "2.0.0", "2.5.0", "3.0.0"]]
SPECS = ["*", "^1", "^2", ">=1.5", "<2", "==1.0.0", "!=1.5.0", "^1 || ^3"]

# A term is a predicate over "the selected version, or None when the package is not selected".
OUTCOMES = [None, *UNIVERSE]


def holds(term: Term, selected: Version | None) -> bool:
    inside = selected is not None and selected in term.versions
    return inside if term.positive else not inside


def terms() -> list[Term]:
    return [Term("p", parse_specifier(s), positive) for s in SPECS for positive in (True, False)]


@pytest.mark.parametrize("a", terms(), ids=str)
def test_intersect_negate_difference(a: Term) -> None:
    for b in terms():
        for outcome in OUTCOMES:
            assert holds(a.intersect(b), outcome) == (holds(a, outcome) and holds(b, outcome))
            assert holds(a.difference(b), outcome) == (holds(a, outcome) and not holds(b, outcome))
        assert a.negate().negate() == a


@pytest.mark.parametrize("a", terms(), ids=str)
def test_relation(a: Term) -> None:
    """`a.relation(b)`: does knowing `a` make `b` certainly true, certainly false, or neither."""
    for b in terms():
        worlds = [o for o in OUTCOMES if holds(a, o)]
        always = all(holds(b, o) for o in worlds)
        never = not any(holds(b, o) for o in worlds)
        relation = a.relation(b)
        if always:
            assert relation is Relation.SATISFIED, (a, b)
        elif never:
            assert relation is Relation.CONTRADICTED, (a, b)
        else:
            assert relation is Relation.INCONCLUSIVE, (a, b)
        assert a.satisfies(b) == always


def test_decided_fast_path() -> None:
    decided = Term("p", parse_specifier("==1.5.0"))
    assert decided.relation(Term("p", parse_specifier("^1"))) is Relation.SATISFIED
    assert decided.relation(Term("p", parse_specifier("^1"), False)) is Relation.CONTRADICTED
    assert decided.relation(Term("p", parse_specifier("^2"))) is Relation.CONTRADICTED
    assert decided.relation(Term("p", parse_specifier("^2"), False)) is Relation.SATISFIED


def test_equality_and_text() -> None:
    assert Term("p", parse_specifier("^1")) == Term("p", parse_specifier(">=1,<2"))
    assert Term("p", parse_specifier("^1")) != Term("p", parse_specifier("^1"), False)
    assert len({Term("p", parse_specifier("^1")), Term("p", parse_specifier(">=1,<2"))}) == 1
    assert str(Term("p", parse_specifier("^1"), False)) == "not p >=1.0.0, <2.0.0"
    assert Term("p", parse_specifier(">=2, <1")).is_empty()
