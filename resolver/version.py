"""Semantic versions (semver 2.0.0): parsing, precedence and the successor of a version."""

from __future__ import annotations

import re

from resolver.errors import InvalidVersion
from valueclass import Slotted

__all__ = ["MIN_VERSION", "Version", "version_predecessor", "version_successor"]

_NUM = r"0|[1-9][0-9]*"
_IDENT = r"[0-9A-Za-z-]+"
_VERSION_RE = re.compile(
    rf"^(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_IDENT}(?:\.{_IDENT})*))?"
    rf"(?:\+(?P<build>{_IDENT}(?:\.{_IDENT})*))?$"
)
_IDENT_RE = re.compile(r"^[0-9A-Za-z-]+$")

PrereleaseId = int | str
# Sort key of one pre-release identifier: numeric identifiers sort numerically and before
# alphanumeric ones, which sort in ASCII order (semver §11.4).
_IdKey = tuple[int, int, str]
_Key = tuple[int, int, int, int, tuple[_IdKey, ...]]


def _id_key(ident: PrereleaseId) -> _IdKey:
    return (0, ident, "") if isinstance(ident, int) else (1, 0, ident)


def _parse_identifier(text: str) -> PrereleaseId:
    if text.isdigit():
        return int(text)
    return text


class Version(Slotted):
    """A semver version ``MAJOR.MINOR.PATCH[-prerelease][+build]``.

    Ordering follows semver precedence: a pre-release sorts before its release, pre-release
    identifiers compare field by field (numeric < alphanumeric, shorter < longer when equal so
    far). Build metadata is kept for ``str()`` but ignored by ordering, equality and hashing.
    """

    __slots__ = _fields = ("major", "minor", "patch", "prerelease", "build", "_key", "_hash")
    major: int
    minor: int
    patch: int
    prerelease: tuple[PrereleaseId, ...]
    build: str
    _key: _Key
    _hash: int

    def __init__(self, major: int, minor: int, patch: int, prerelease: tuple[PrereleaseId, ...] = (),
                 build: str = "") -> None:
        setattr_ = object.__setattr__
        setattr_(self, "major", major)
        setattr_(self, "minor", minor)
        setattr_(self, "patch", patch)
        setattr_(self, "prerelease", prerelease)
        setattr_(self, "build", build)
        for name in ("major", "minor", "patch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidVersion(f"{name} must be a non-negative integer, got {value!r}")
        for ident in self.prerelease:
            if isinstance(ident, int):
                if isinstance(ident, bool) or ident < 0:
                    raise InvalidVersion(f"invalid pre-release identifier {ident!r}")
            elif not _IDENT_RE.match(ident) or ident.isdigit():
                raise InvalidVersion(f"invalid pre-release identifier {ident!r}")
        release = 0 if self.prerelease else 1
        key = (self.major, self.minor, self.patch, release, tuple(_id_key(i) for i in self.prerelease))
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    @classmethod
    def _trusted(
        cls, major: int, minor: int, patch: int, prerelease: tuple[PrereleaseId, ...] = ()
    ) -> Version:
        """Build a version from parts already known to be valid (skips validation; hot path)."""
        new = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(new, "major", major)
        setattr_(new, "minor", minor)
        setattr_(new, "patch", patch)
        setattr_(new, "prerelease", prerelease)
        setattr_(new, "build", "")
        key = (major, minor, patch, 0 if prerelease else 1, tuple(_id_key(i) for i in prerelease))
        setattr_(new, "_key", key)
        setattr_(new, "_hash", hash(key))
        return new

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse ``MAJOR.MINOR.PATCH[-prerelease][+build]``; raise `InvalidVersion` if malformed."""
        if not isinstance(text, str):
            raise InvalidVersion(f"expected a version string, got {type(text).__name__}")
        match = _VERSION_RE.match(text.strip())
        if match is None:
            raise InvalidVersion(
                f"invalid version {text!r}: expected MAJOR.MINOR.PATCH[-prerelease][+build], "
                "e.g. 1.2.3 or 1.2.3-beta.1 (numbers without leading zeros)"
            )
        pre = match.group("pre")
        prerelease: tuple[PrereleaseId, ...] = ()
        if pre is not None:
            parts = pre.split(".")
            for part in parts:
                if len(part) > 1 and part.isdigit() and part.startswith("0"):
                    raise InvalidVersion(
                        f"invalid version {text!r}: numeric pre-release identifier {part!r} has a leading zero"
                    )
            prerelease = tuple(_parse_identifier(part) for part in parts)
        return cls(
            int(match.group("major")),
            int(match.group("minor")),
            int(match.group("patch")),
            prerelease,
            match.group("build") or "",
        )

    @property
    def is_prerelease(self) -> bool:
        """True when the version carries a pre-release tag (``1.0.0-rc.1``)."""
        return bool(self.prerelease)

    @property
    def release(self) -> Version:
        """The version without pre-release and build parts."""
        return Version(self.major, self.minor, self.patch)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(i) for i in self.prerelease)
        if self.build:
            text += "+" + self.build
        return text

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key == other._key

    def __lt__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key >= other._key


MIN_VERSION = Version(0, 0, 0, (0,))
"""The lowest version there is: nothing sorts before ``0.0.0-0``."""


def version_successor(version: Version) -> Version:
    """The smallest version strictly greater than `version` (there is nothing in between).

    ``1.2.3`` → ``1.2.4-0``; ``1.2.3-rc`` → ``1.2.3-rc.0``. This lets every version set be a
    union of half-open intervals ``[low, high)``, which makes its representation canonical.
    """
    if version.prerelease:
        return Version._trusted(version.major, version.minor, version.patch, (*version.prerelease, 0))
    return Version._trusted(version.major, version.minor, version.patch + 1, (0,))


def version_predecessor(version: Version) -> Version | None:
    """The version whose successor is `version`, or None when there is none (e.g. ``1.2.0``)."""
    pre = version.prerelease
    if len(pre) > 1 and pre[-1] == 0:
        return Version(version.major, version.minor, version.patch, pre[:-1])
    if pre == (0,) and version.patch > 0:
        return Version(version.major, version.minor, version.patch - 1)
    return None
