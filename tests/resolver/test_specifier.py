"""Tests of specifier parsing: operators, partial versions, caret and tilde tables, errors."""

from __future__ import annotations

import pytest

from resolver import InvalidSpecifier, ResolverError, Version, VersionSet, allows_prereleases, parse_specifier


def v(text: str) -> Version:
    return Version.parse(text)


def between(low: str, high: str) -> VersionSet:
    return VersionSet([(v(low), v(high))])


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("^1.2.3", ">=1.2.3, <2.0.0"),
        ("^0.2.3", ">=0.2.3, <0.3.0"),
        ("^0.0.3", ">=0.0.3, <0.0.4"),
        ("^1.2", ">=1.2.0, <2.0.0"),
        ("^1", ">=1.0.0, <2.0.0"),
        ("^0.0", ">=0.0.0, <0.1.0"),
        ("^0", ">=0.0.0, <1.0.0"),
        ("^1.2.3-beta.1", ">=1.2.3-beta.1, <2.0.0"),
        ("~1.2.3", ">=1.2.3, <1.3.0"),
        ("~1.2", ">=1.2.0, <1.3.0"),
        ("~1", ">=1.0.0, <2.0.0"),
        ("~0.2.3", ">=0.2.3, <0.3.0"),
    ],
)
def test_caret_and_tilde(spec: str, expected: str) -> None:
    assert str(parse_specifier(spec)) == expected
    assert parse_specifier(spec) == parse_specifier(expected.replace(" ", ""))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("*", "*"),
        ("", "*"),
        ("   ", "*"),
        ("1.2.3", "==1.2.3"),
        ("==1.2.3", "==1.2.3"),
        ("=1.2.3", "==1.2.3"),
        ("==1.2", ">=1.2.0, <1.3.0"),
        ("==1", ">=1.0.0, <2.0.0"),
        ("1.2.*", ">=1.2.0, <1.3.0"),
        ("1.x", ">=1.0.0, <2.0.0"),
        (">=1.2", ">=1.2.0"),
        (">1.2", ">=1.3.0"),
        (">1.2.3", ">1.2.3"),
        ("<1.2", "<1.2.0"),
        ("<=1.2", "<1.3.0"),
        ("<=1.2.3", "<=1.2.3"),
        ("!=1.5.0", "!=1.5.0"),
        ("!=1.5", "<1.5.0 || >=1.6.0"),
        (">=1.2,<2", ">=1.2.0, <2.0.0"),
        (" >= 1.2 , < 2 ", ">=1.2.0, <2.0.0"),
        (">=1, <2, !=1.5.0, !=1.6.0", ">=1.0.0, <2.0.0, !=1.5.0, !=1.6.0"),
        ("<1 || >=2", "<1.0.0 || >=2.0.0"),
        (">=2, <1", "<none>"),
        ("*, >=1", ">=1.0.0"),
        ("==1.2.3+build", "==1.2.3"),
    ],
)
def test_operators(spec: str, expected: str) -> None:
    assert str(parse_specifier(spec)) == expected


def test_bare_version_is_exact() -> None:
    s = parse_specifier("1.2.3")
    assert v("1.2.3") in s and v("1.2.4") not in s and v("1.2.3-rc.1") not in s


def test_membership_at_bounds() -> None:
    s = parse_specifier(">=1.2, <2")
    assert v("1.2.0") in s and v("1.99.99") in s
    assert v("2.0.0") not in s and v("1.2.0-rc.1") not in s
    # Bounds follow plain semver order: 2.0.0-beta sorts before 2.0.0 (see allows_prereleases).
    assert v("2.0.0-beta") in s


def test_printed_form_parses_back() -> None:
    for text in ["^1.2", ">1.2.3, <=2.0.0", "!=1.5.0", "<1 || >=2, !=2.1.0", "==0.0.0-0", ">=1.0.0-rc"]:
        s = parse_specifier(text)
        assert parse_specifier(str(s)) == s


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("*", False),
        (">=1.0", False),
        ("^1.2.3", False),
        (">=1.0.0-beta", True),
        ("^2.0.0-rc.1", True),
        (">=1, <2.0.0-0", True),
        ("==1.2.3+build", False),
    ],
)
def test_allows_prereleases(spec: str, named: bool) -> None:
    assert allows_prereleases(spec) is named


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            ">=1.x.3",
            "invalid specifier '>=1.x.3' at position 2: a wildcard cannot be followed by a number in '1.x.3'",
        ),
        (">=1.0,", "invalid specifier '>=1.0,': empty clause at position 6"),
        (">=1.0, ,<2", "invalid specifier '>=1.0, ,<2': empty clause at position 7"),
        (">=", "invalid specifier '>=': expected a version after '>=' at position 2"),
        (
            ">=1.0, <2.0.0.0",
            "invalid specifier '>=1.0, <2.0.0.0' at position 8: '2.0.0.0' is not a version "
            "(expected e.g. 1, 1.2, 1.2.3 or 1.2.3-beta.1)",
        ),
    ],
)
def test_error_messages(spec: str, message: str) -> None:
    with pytest.raises(InvalidSpecifier) as info:
        parse_specifier(spec)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "spec",
    ["foo", ">= 1.0 2.0", "=>1.0", "1.02", "^", "~>1.2", "!==1", "1.2.3-", ">=1.0 <2.0", "||", "1.*.3"],
)
def test_rejects(spec: str) -> None:
    with pytest.raises(InvalidSpecifier):
        parse_specifier(spec)


def test_error_types() -> None:
    with pytest.raises(ValueError):
        parse_specifier("nope")
    with pytest.raises(ResolverError):
        parse_specifier("nope")
    with pytest.raises(InvalidSpecifier):
        parse_specifier(None)  # type: ignore[arg-type]


def test_between_helper_matches_parser() -> None:
    assert parse_specifier("^1.2") == between("1.2.0", "2.0.0")
