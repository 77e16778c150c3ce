"""Tests of dependency strings: slug plus optional specifier."""

from __future__ import annotations

import pytest

from resolver import InvalidRequirement, InvalidSpecifier, Requirement, parse_requirement, parse_specifier


@pytest.mark.parametrize(
    ("text", "name", "spec_text"),
    [
        ("git-workflow", "git-workflow", "*"),
        ("  git-workflow  ", "git-workflow", "*"),
        ("git-workflow==1.2.0", "git-workflow", "==1.2.0"),
        ("git-workflow>=1.2,<2", "git-workflow", ">=1.2,<2"),
        ("git-workflow^1.2", "git-workflow", "^1.2"),
        ("git-workflow~1.2.3", "git-workflow", "~1.2.3"),
        ("git-workflow@^1.2", "git-workflow", "^1.2"),
        ("git-workflow@1.2.0", "git-workflow", "1.2.0"),
        ("git-workflow @ 1.2.0", "git-workflow", "1.2.0"),
        ("git-workflow >=1.2, <2", "git-workflow", ">=1.2, <2"),
        ("git-workflow 1.2.0", "git-workflow", "1.2.0"),
        ("git-workflow*", "git-workflow", "*"),
        ("a", "a", "*"),
        ("0x-2", "0x-2", "*"),
    ],
)
def test_parse(text: str, name: str, spec_text: str) -> None:
    req = parse_requirement(text)
    assert req.name == name
    assert req.text == spec_text
    assert req.spec == parse_specifier(spec_text)
    assert req.allows_prerelease is False


def test_prerelease_flag() -> None:
    assert parse_requirement("x>=1.0.0-rc.1").allows_prerelease
    assert parse_requirement("x@2.0.0-beta").allows_prerelease


def test_str() -> None:
    assert str(parse_requirement("a")) == "a"
    assert str(parse_requirement("a^1.2")) == "a^1.2"
    assert str(parse_requirement("a@1.2.0")) == "a@1.2.0"
    assert parse_requirement(str(parse_requirement("a >=1, <2"))) == parse_requirement("a>=1, <2")


def test_frozen_dataclass() -> None:
    req = parse_requirement("a^1")
    assert req == Requirement("a", parse_specifier("^1"), "^1", False)
    assert hash(req) == hash(parse_requirement("a^1"))
    with pytest.raises(AttributeError):
        req.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "invalid requirement '': it is empty (expected a package name such as 'git-workflow')"),
        (
            "Git-Workflow",
            "invalid requirement 'Git-Workflow': it must start with a package name matching ^[a-z0-9][a-z0-9-]*$",
        ),
        (
            "git_workflow",
            "invalid requirement 'git_workflow': unexpected '_' at position 3; a package name is lowercase "
            "letters, digits and '-', followed by an optional specifier",
        ),
        ("x@", "invalid requirement 'x@': expected a version or specifier after '@'"),
        ("a" * 65, f"invalid requirement '{'a' * 65}': package name is 65 characters long (at most 64)"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidRequirement) as info:
        parse_requirement(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text", ["-x", "x.y", "x/y", "skill:x", "x1.2.3"])
def test_rejects_bad_names(text: str) -> None:
    with pytest.raises(InvalidRequirement):
        parse_requirement(text)


def test_bad_specifier_raises_invalid_specifier() -> None:
    with pytest.raises(InvalidSpecifier, match="'>=1.x.3'"):
        parse_requirement("git-workflow>=1.x.3")
    with pytest.raises(InvalidSpecifier):
        parse_requirement("git-workflow@latest")
