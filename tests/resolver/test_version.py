"""Tests of semver parsing, printing and precedence."""

from __future__ import annotations

import pytest

from resolver import InvalidVersion, ResolverError, Version
from resolver.version import MIN_VERSION, version_predecessor, version_successor


@pytest.mark.parametrize(
    "text",
    [
        "0.0.0",
        "1.2.3",
        "10.20.30",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-0.3.7",
        "1.0.0-x.7.z.92",
        "1.0.0-x-y-z.--",
        "1.0.0+20130313144700",
        "1.0.0-beta+exp.sha.5114f85",
        "1.0.0+21AF26D3---117B344",
    ],
)
def test_parse_round_trips(text: str) -> None:
    assert str(Version.parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "1.2",
        "1.2.3.4",
        "01.2.3",
        "1.02.3",
        "1.2.03",
        "v1.2.3",
        "1.2.3-",
        "1.2.3-01",
        "1.2.3-a..b",
        "1.2.3+",
        "-1.2.3",
        "1.2.3-beta_1",
        "a.b.c",
        " 1.2 ",
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(InvalidVersion):
        Version.parse(text)


def test_error_is_readable_and_in_the_tree() -> None:
    with pytest.raises(InvalidVersion) as info:
        Version.parse("1.2")
    assert str(info.value) == (
        "invalid version '1.2': expected MAJOR.MINOR.PATCH[-prerelease][+build], "
        "e.g. 1.2.3 or 1.2.3-beta.1 (numbers without leading zeros)"
    )
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ResolverError)


def test_leading_zero_in_prerelease_is_explained() -> None:
    with pytest.raises(InvalidVersion, match="leading zero"):
        Version.parse("1.0.0-rc.01")


def test_semver_spec_precedence_example() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1-0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
        "10.0.0",
    ]
    versions = [Version.parse(t) for t in ordered]
    assert sorted(reversed(versions)) == versions
    for low, high in zip(versions, versions[1:], strict=False):
        assert low < high and low <= high and high > low and high >= low and low != high


def test_build_metadata_ignored_for_ordering_and_equality() -> None:
    a, b = Version.parse("1.0.0+a"), Version.parse("1.0.0+b")
    assert a == b and hash(a) == hash(b) and not a < b
    assert str(a) == "1.0.0+a"


def test_is_prerelease_and_release() -> None:
    assert Version.parse("1.0.0-rc.1").is_prerelease
    assert not Version.parse("1.0.0+build").is_prerelease
    assert Version.parse("1.2.3-rc.1+b").release == Version(1, 2, 3)


def test_constructor_validates() -> None:
    assert Version(1, 2, 3, ("beta", 2)) == Version.parse("1.2.3-beta.2")
    with pytest.raises(InvalidVersion):
        Version(-1, 0, 0)
    with pytest.raises(InvalidVersion):
        Version(1, 0, 0, ("12",))


def test_frozen_and_hashable() -> None:
    v = Version.parse("1.2.3")
    assert {v: 1}[Version(1, 2, 3)] == 1
    with pytest.raises(AttributeError):
        v.major = 2  # type: ignore[misc]


def test_comparing_with_other_types() -> None:
    assert Version(1, 0, 0) != "1.0.0"
    with pytest.raises(TypeError):
        _ = Version(1, 0, 0) < "1.0.0"  # type: ignore[operator]


@pytest.mark.parametrize(
    ("text", "successor"),
    [("1.2.3", "1.2.4-0"), ("1.2.3-rc", "1.2.3-rc.0"), ("0.0.0-0", "0.0.0-0.0")],
)
def test_successor_and_predecessor(text: str, successor: str) -> None:
    v, s = Version.parse(text), Version.parse(successor)
    assert version_successor(v) == s
    assert version_predecessor(s) == v


def test_no_predecessor_for_limit_versions() -> None:
    assert version_predecessor(Version.parse("1.2.0")) is None
    assert version_predecessor(Version.parse("1.2.0-0")) is None
    assert version_predecessor(Version.parse("1.2.3-alpha")) is None
    assert version_predecessor(MIN_VERSION) is None
