"""Dependency strings: a package slug optionally followed by a specifier (``git-workflow^1.2``)."""

from __future__ import annotations

import re

from resolver.errors import InvalidRequirement
from resolver.slug import SLUG_MAX_LENGTH, SLUG_PATTERN
from resolver.specifier import _parse
from resolver.version_set import VersionSet
from valueclass import Slotted

__all__ = ["SLUG_MAX_LENGTH", "SLUG_PATTERN", "Requirement", "parse_requirement"]


_SLUG_PREFIX_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
_SPEC_START = frozenset("=!<>^~*@ \t")


class Requirement(Slotted):
    """A parsed dependency: package `name`, the allowed versions and the specifier as written.

    `text` is the specifier text as the user wrote it (stripped, without ``@``), ``"*"`` if none.
    `allows_prerelease` is True when the specifier names a pre-release version.
    """

    __slots__ = _fields = ("name", "spec", "text", "allows_prerelease")
    name: str
    spec: VersionSet
    text: str
    allows_prerelease: bool

    def __init__(self, name: str, spec: VersionSet, text: str = "*", allows_prerelease: bool = False) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "allows_prerelease", allows_prerelease)


    def __str__(self) -> str:
        if self.text == "*":
            return self.name
        if self.text[0].isdigit():
            return f"{self.name}@{self.text}"
        return f"{self.name}{self.text}"


def _bad(text: str, reason: str) -> InvalidRequirement:
    return InvalidRequirement(f"invalid requirement {text!r}: {reason}")


def parse_requirement(text: str) -> Requirement:
    """Parse ``slug``, ``slug<spec>``, ``slug <spec>`` or ``slug@<spec>`` into a `Requirement`.

    Examples: ``git-workflow``, ``git-workflow==1.2.0``, ``git-workflow>=1.2,<2``,
    ``git-workflow^1.2``, ``git-workflow~1.2.3``, ``git-workflow@^1.2``, ``git-workflow@1.2.0``.
    Raises `InvalidRequirement`, or `InvalidSpecifier` when only the specifier is malformed.
    """
    if not isinstance(text, str):
        raise InvalidRequirement(f"expected a requirement string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise _bad(text, "it is empty (expected a package name such as 'git-workflow')")
    match = _SLUG_PREFIX_RE.match(stripped)
    if match is None:
        raise _bad(text, "it must start with a package name matching ^[a-z0-9][a-z0-9-]*$")
    name, rest = match.group(), stripped[match.end() :]
    if rest and rest[0] not in _SPEC_START:
        raise _bad(
            text,
            f"unexpected {rest[0]!r} at position {len(text) - len(text.lstrip()) + match.end()}; "
            "a package name is lowercase letters, digits and '-', followed by an optional specifier",
        )
    if len(name) > SLUG_MAX_LENGTH:
        raise _bad(text, f"package name is {len(name)} characters long (at most {SLUG_MAX_LENGTH})")
    spec_text = rest.strip()
    if spec_text.startswith("@"):
        spec_text = spec_text[1:].strip()
        if not spec_text:
            raise _bad(text, "expected a version or specifier after '@'")
    spec, named_prerelease = _parse(spec_text)
    return Requirement(name, spec, spec_text or "*", named_prerelease)
