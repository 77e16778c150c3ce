"""Property tests of the version-set algebra against brute force over a finite universe of versions."""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from resolver import Version, VersionSet, parse_specifier
from resolver.version import MIN_VERSION, version_successor

_BOUNDS = [
    Version.parse(t) for t in ["0.0.0", "0.0.1", "0.1.0", "1.0.0-alpha", "1.0.0", "1.1.0", "2.0.0", "2.0.1"]
]
_PARTIALS = [
    "0",
    "0.0",
    "0.1",
    "1",
    "1.0",
    "1.1",
    "1.2",
    "2",
    "2.0",
    "0.0.0",
    "0.0.1",
    "1.0.0",
    "1.1.0",
    "2.0.0",
]
_OPS = ["==", "!=", ">=", ">", "<=", "<", "^", "~", ""]


def _universe() -> list[Version]:
    """Every bound a generated set can have, plus the lowest version.

    Canonical sets are unions of ``[low, high)``, so membership is constant between two
    consecutive bounds: these versions tell apart any two different sets built from them.
    """
    bounds = {MIN_VERSION, *_BOUNDS, *(version_successor(b) for b in _BOUNDS)}
    for op in _OPS:
        for partial in _PARTIALS:
            for low, high in parse_specifier(f"{op}{partial}").intervals:
                bounds.update(b for b in (low, high) if b is not None)
    extra = ["0.0.0-alpha", "1.0.0-beta", "1.2.0-rc.1", "2.0.0-beta", "3.0.0", "10.0.0"]
    return sorted(bounds | {Version.parse(t) for t in extra})


UNIVERSE = _universe()
specifiers = st.builds(lambda op, ver: f"{op}{ver}", st.sampled_from(_OPS), st.sampled_from(_PARTIALS))
clauses = st.lists(specifiers, min_size=1, max_size=3).map(", ".join)
from_text = st.lists(clauses, min_size=1, max_size=2).map(" || ".join).map(parse_specifier)
intervals = st.tuples(st.sampled_from([None, *_BOUNDS]), st.sampled_from([None, *_BOUNDS]))
from_intervals = st.lists(intervals, max_size=4).map(VersionSet)
singletons = st.sampled_from(UNIVERSE).map(VersionSet.singleton)
built = st.one_of(from_text, from_intervals)


def _pool(size: int = 600) -> list[VersionSet]:
    """Random sets from random specifiers and intervals, drawn once: cheap for hypothesis to sample."""
    rng = random.Random(1234)
    pool = {VersionSet.empty(), VersionSet.full(), *(VersionSet.singleton(v) for v in UNIVERSE)}
    bounds = [None, *_BOUNDS]
    while len(pool) < size:
        if rng.random() < 0.6:
            clauses = [
                ", ".join(f"{rng.choice(_OPS)}{rng.choice(_PARTIALS)}" for _ in range(rng.randint(1, 3)))
                for _ in range(rng.randint(1, 2))
            ]
            pool.add(parse_specifier(" || ".join(clauses)))
        else:
            pool.add(VersionSet([(rng.choice(bounds), rng.choice(bounds)) for _ in range(rng.randint(0, 4))]))
    return sorted(pool, key=str)


# drawn when a test first samples it (about a second): in the worker that runs these laws, not in every collection
sets = st.deferred(lambda: st.sampled_from(_pool()))

LAWS = settings(max_examples=200, deadline=None)


def members(s: VersionSet) -> frozenset[Version]:
    return frozenset(v for v in UNIVERSE if s.contains(v))


def check(result: VersionSet, a: VersionSet, b: VersionSet, op: Callable[[bool, bool], bool]) -> None:
    for v in UNIVERSE:
        assert result.contains(v) == op(a.contains(v), b.contains(v)), v


@LAWS
@given(sets, sets)
def test_intersection_is_and(a: VersionSet, b: VersionSet) -> None:
    check(a.intersection(b), a, b, lambda x, y: x and y)
    check(a & b, a, b, lambda x, y: x and y)


@LAWS
@given(sets, sets)
def test_union_is_or(a: VersionSet, b: VersionSet) -> None:
    check(a.union(b), a, b, lambda x, y: x or y)


@LAWS
@given(sets, sets)
def test_difference_is_and_not(a: VersionSet, b: VersionSet) -> None:
    check(a.difference(b), a, b, lambda x, y: x and not y)


@LAWS
@given(sets)
def test_complement_is_not(a: VersionSet) -> None:
    for v in UNIVERSE:
        assert a.complement().contains(v) != a.contains(v)
        assert (v in a) == a.contains(v)


@LAWS
@given(sets)
def test_double_complement(a: VersionSet) -> None:
    assert a.complement().complement() == a


@LAWS
@given(sets, sets)
def test_de_morgan(a: VersionSet, b: VersionSet) -> None:
    assert (a | b).complement() == a.complement() & b.complement()
    assert (a & b).complement() == a.complement() | b.complement()


@LAWS
@given(sets, sets, sets)
def test_associative_commutative_distributive(a: VersionSet, b: VersionSet, c: VersionSet) -> None:
    assert a & b == b & a and a | b == b | a
    assert (a & b) & c == a & (b & c)
    assert (a | b) | c == a | (b | c)
    assert a & (b | c) == (a & b) | (a & c)


@LAWS
@given(sets)
def test_identities(a: VersionSet) -> None:
    assert a & VersionSet.full() == a and a | VersionSet.empty() == a
    assert (a & VersionSet.empty()).is_empty() and (a | VersionSet.full()).is_full()
    assert (a & a.complement()).is_empty() and (a | a.complement()).is_full()
    assert a.is_empty() == (a == VersionSet.empty()) and a.is_full() == (a == VersionSet.full())


@LAWS
@given(sets, sets)
def test_subset_and_disjoint(a: VersionSet, b: VersionSet) -> None:
    assert (a & b).is_subset(a) and a.is_subset(a | b)
    assert a.is_subset(b) == (a - b).is_empty()
    assert a.is_disjoint(b) == (a & b).is_empty()
    if a.is_subset(b):
        assert members(a) <= members(b)
    if a.is_disjoint(b):
        assert not members(a) & members(b)


@LAWS
@given(st.one_of(sets, built), st.one_of(sets, built))
def test_canonical_form(a: VersionSet, b: VersionSet) -> None:
    """Bounds come from the universe's versions, so equal membership over it means equal sets."""
    if members(a) == members(b):
        assert a == b and hash(a) == hash(b) and str(a) == str(b)
    else:
        assert a != b


@LAWS
@given(st.one_of(sets, built))
def test_canonical_intervals(a: VersionSet) -> None:
    spans = a.intervals
    for low, high in spans:
        assert low is None or low > MIN_VERSION
        assert low is None or high is None or low < high
    for (_, high), (low, _) in zip(spans, spans[1:], strict=False):
        assert high is not None and low is not None and high < low


@LAWS
@given(st.one_of(sets, built))
def test_str_parses_back(a: VersionSet) -> None:
    if not a.is_empty():
        assert parse_specifier(str(a)) == a


@LAWS
@given(st.sampled_from(UNIVERSE))
def test_singleton(v: Version) -> None:
    s = VersionSet.singleton(v)
    assert members(s) == {v}
    assert s.single_version() == v and s.is_singleton()
    assert str(s) == f"=={v}"


def test_empty_and_full() -> None:
    assert str(VersionSet.empty()) == "<none>" and str(VersionSet.full()) == "*"
    assert not members(VersionSet.empty()) and members(VersionSet.full()) == set(UNIVERSE)
    assert VersionSet.empty().complement() == VersionSet.full()
    assert VersionSet() == VersionSet.empty() and VersionSet([(None, None)]) == VersionSet.full()
    assert VersionSet([(MIN_VERSION, None)]) == VersionSet.full()
    assert VersionSet.full().single_version() is None
    assert repr(parse_specifier("^1")) == "VersionSet('>=1.0.0, <2.0.0')"


def test_immutable() -> None:
    s = VersionSet.full()
    try:
        s._intervals = ()  # type: ignore[misc]
    except AttributeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("VersionSet must be immutable")
    assert s.is_full()


def test_pickle_and_copy() -> None:
    s = parse_specifier("^1.2 || >=3, !=3.1.0")
    assert pickle.loads(pickle.dumps(s)) == s
    assert copy.copy(s) is s and copy.deepcopy([s])[0] is s
    v = Version.parse("1.2.3-rc.1+b")
    assert pickle.loads(pickle.dumps(v)) == v and str(copy.deepcopy(v)) == "1.2.3-rc.1+b"


def test_filter_keeps_order() -> None:
    s = parse_specifier("^1")
    assert list(s.filter(reversed(UNIVERSE))) == [v for v in reversed(UNIVERSE) if v in s]
