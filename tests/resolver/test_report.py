"""Tests of the explanation writer on hand-built derivation trees, and of each phrase by cause."""

from __future__ import annotations

from resolver import Dependency, Incompatibility, Term, Version, VersionSet, parse_specifier
from resolver.incompatibility import (
    ROOT,
    Cause,
    ConflictCause,
    DependencyCause,
    NoVersionsCause,
    RootCause,
    UnavailableCause,
)
from resolver.report import describe, report

ANY = VersionSet.full()


def pos(package: str, spec: str = "*") -> Term:
    return Term(package, parse_specifier(spec))


def neg(package: str, spec: str = "*") -> Term:
    return Term(package, parse_specifier(spec), False)


def dep(depender: str, depender_spec: str, package: str, spec: str) -> Incompatibility:
    return Incompatibility(
        [pos(depender, depender_spec), neg(package, spec)], DependencyCause(Dependency.parse(package, spec))
    )


def root_dep(package: str, spec: str) -> Incompatibility:
    return Incompatibility(
        [Term(ROOT, ANY), neg(package, spec)], DependencyCause(Dependency.parse(package, spec))
    )


def derived(terms: list[Term], left: Incompatibility, right: Incompatibility) -> Incompatibility:
    return Incompatibility(terms, ConflictCause(left, right))


def _placeholder() -> Incompatibility:
    return Incompatibility([pos("x")], NoVersionsCause())


def phrase(terms: list[Term], cause: Cause | None = None) -> str:
    return describe(Incompatibility(terms, cause or ConflictCause(_placeholder(), _placeholder())))


def test_dependency_phrases() -> None:
    assert describe(dep("a", "*", "b", "*")) == "every version of a depends on b"
    assert describe(dep("a", "==1.0.0", "b", "^1.2")) == "a 1.0.0 depends on b ^1.2"
    assert describe(dep("a", ">=1.1.0", "b", ">=1,<2")) == "a >=1.1.0 depends on b >=1,<2"
    assert describe(root_dep("b", "1.2.0")) == "root depends on b 1.2.0"


def test_external_phrases() -> None:
    assert describe(Incompatibility([pos("a")], NoVersionsCause())) == "a has no versions"
    assert (
        describe(Incompatibility([pos("a", "^2")], NoVersionsCause()))
        == "no versions of a match >=2.0.0, <3.0.0"
    )
    skipped = tuple((Version(1, 0, i), "yanked") for i in range(5, 0, -1))
    assert describe(Incompatibility([pos("a", "^1")], NoVersionsCause(skipped))) == (
        "no versions of a match >=1.0.0, <2.0.0 (1.0.5 is yanked, 1.0.4 is yanked, 1.0.3 is yanked, "
        "2 more are yanked or pre-releases)"
    )
    assert (
        describe(Incompatibility([pos("a")], UnavailableCause("not found"))) == "a is unavailable (not found)"
    )
    assert (
        describe(Incompatibility([pos("a", "==1.0.0")], UnavailableCause("bad metadata")))
        == "a 1.0.0 is unavailable (bad metadata)"
    )
    assert describe(Incompatibility([Term(ROOT, ANY, False)], RootCause())) == "root is required"


def test_derived_phrases() -> None:
    assert phrase([]) == "version solving failed"
    assert phrase([pos("a")]) == "a is forbidden"
    assert phrase([pos("a", "<1.1.0")]) == "a <1.1.0 is forbidden"
    assert phrase([neg("a", "^1")]) == "a >=1.0.0, <2.0.0 is required"
    assert phrase([pos("a"), pos("b", "^1")]) == "a is incompatible with b >=1.0.0, <2.0.0"
    assert phrase([neg("a", "1.0.0"), neg("b", "2.0.0")]) == "either a 1.0.0 or b 2.0.0"
    assert phrase([pos("a"), neg("b", "2.0.0")]) == "every version of a requires b 2.0.0"
    assert phrase([pos("a"), pos("c"), neg("b", "2.0.0")]) == "if a and c then b 2.0.0"
    assert phrase([pos("a"), pos("b"), pos("c")]) == "one of a or b or c must be false"
    assert phrase([neg("a"), neg("b"), neg("c")]) == "one of a or b or c must be true"


def test_root_terms_are_dropped_from_derived_incompatibilities() -> None:
    inc = Incompatibility([Term(ROOT, ANY), pos("a")], ConflictCause(_placeholder(), _placeholder()))
    assert [t.package for t in inc.terms] == ["a"]
    assert Incompatibility([Term(ROOT, ANY)], ConflictCause(_placeholder(), _placeholder())).is_failure


def test_terms_about_one_package_are_merged() -> None:
    inc = Incompatibility([pos("a", ">=1"), pos("b"), pos("a", "<2")], NoVersionsCause())
    assert [(t.package, str(t.versions)) for t in inc.terms] == [("a", ">=1.0.0, <2.0.0"), ("b", "*")]
    assert inc.term_for("b") is inc.terms[1] and inc.term_for("c") is None


def test_display_name_and_texts_from_dependencies() -> None:
    # A derived term whose set equals a dependency's specifier is written as that specifier.
    a_b = dep("a", "*", "b", "^2.0")
    b_none = Incompatibility([pos("b", "^2.0")], NoVersionsCause())
    a_forbidden = derived([pos("a")], a_b, b_none)
    root = derived([Term(ROOT, ANY)], a_forbidden, root_dep("a", "^1"))
    assert report(root, display_name=str.upper, root_name="the project") == (
        "Because every version of A depends on B ^2.0 which doesn't match any versions, A is forbidden.\n"
        "So, because the project depends on A ^1, version solving failed."
    )
    b_required = derived([pos("a"), neg("b", "^2.0")], a_b, a_b)
    assert describe(b_required) == "every version of a requires b >=2.0.0, <3.0.0"
    assert "b ^2.0" in report(derived([Term(ROOT, ANY)], b_required, root_dep("a", "*")))


def test_thus_branch_and_back_references() -> None:
    """Two derived causes, one of which follows from two external facts."""
    simple = derived(
        [pos("a")], dep("a", "*", "b", "^1"), Incompatibility([pos("b", "^1")], NoVersionsCause())
    )
    inner = derived([Term(ROOT, ANY), neg("c")], root_dep("c", "*"), dep("c", "*", "a", "*"))
    complex_ = derived([Term(ROOT, ANY), neg("a")], inner, dep("c", "*", "a", "*"))
    root = derived([Term(ROOT, ANY)], complex_, simple)
    assert report(root) == (
        "Because root depends on c which depends on a, c is required.\n"
        "And because every version of c depends on a, a is required.\n"
        "Because every version of a depends on b ^1 which doesn't match any versions, a is forbidden.\n"
        "Thus, version solving failed."
    )


def test_shared_derivation_is_numbered_and_referenced() -> None:
    shared = derived(
        [pos("a")], dep("a", "*", "b", "^1"), Incompatibility([pos("b", "^1")], NoVersionsCause())
    )
    uses_shared = derived([pos("c")], dep("c", "*", "a", "*"), shared)
    root = derived([Term(ROOT, ANY)], uses_shared, shared)
    assert report(root) == (
        "(1) Because every version of a depends on b ^1 which doesn't match any versions, a is forbidden.\n"
        "    And because every version of c depends on a, c is forbidden.\n"
        "    So, because a is forbidden (1), version solving failed."
    )


def test_branches_refer_back_to_numbered_lines() -> None:
    a = derived([pos("a")], dep("a", "*", "b", "^1"), Incompatibility([pos("b", "^1")], NoVersionsCause()))
    c = derived([pos("c")], dep("c", "*", "a", "*"), a)
    d = derived([pos("d")], dep("d", "*", "c", "*"), c)
    root = derived([Term(ROOT, ANY)], derived([pos("q")], d, a), derived([pos("r")], c, a))
    assert report(root) == (
        "(1) Because every version of a depends on b ^1 which doesn't match any versions, a is forbidden.\n"
        "(2) And because every version of c depends on a, c is forbidden.\n"
        "    And because every version of d depends on c, d is forbidden.\n"
        "(3) So, because a is forbidden (1), q is forbidden.\n"
        "\n"
        "    Because c is forbidden (2) and a is forbidden (1), r is forbidden.\n"
        "    So, because q is forbidden (3), version solving failed."
    )
