"""Version specifiers (``>=1.2, <2``, ``^1.2``, ``~1.2.3``, ``==1.0.0``, ``*``) parsed into version sets."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from resolver.errors import InvalidSpecifier, InvalidVersion
from resolver.version import Version, version_successor
from resolver.version_set import VersionSet
from valueclass import Slotted

__all__ = ["allows_prereleases", "matching", "parse_specifier"]

_OPERATORS = ("==", "!=", ">=", "<=", "=", ">", "<", "^", "~")
_NUM = r"(?:0|[1-9][0-9]*)"
_WILD = r"(?:\*|x|X)"
_PARTIAL_RE = re.compile(
    rf"^(?P<major>{_NUM})(?:\.(?P<minor>{_NUM}|{_WILD})(?:\.(?P<patch>{_NUM}|{_WILD}))?)?$"
)


class _Partial(Slotted):
    """A version with 1 to 3 numeric parts; `full` is set when all three (and maybe more) are given."""

    __slots__ = _fields = ("major", "minor", "patch", "full")
    major: int
    minor: int | None
    patch: int | None
    full: Version | None

    def __init__(self, major: int, minor: int | None, patch: int | None, full: Version | None) -> None:
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "full", full)


    def low(self) -> Version:
        if self.full is not None:
            return self.full
        return Version(self.major, self.minor or 0, self.patch or 0)

    def high(self) -> Version:
        """The first version past everything the partial version stands for."""
        if self.full is not None:
            return version_successor(self.full)
        if self.minor is None:
            return Version(self.major + 1, 0, 0)
        return Version(self.major, self.minor + 1, 0)


def _parse_partial(text: str, *, where: str) -> _Partial:
    match = _PARTIAL_RE.match(text)
    if match is not None:
        minor_text, patch_text = match.group("minor"), match.group("patch")
        major = int(match.group("major"))
        if minor_text is None or not minor_text.isdigit():
            if patch_text is not None and patch_text.isdigit():
                raise InvalidSpecifier(f"{where}: a wildcard cannot be followed by a number in {text!r}")
            return _Partial(major, None, None, None)
        minor = int(minor_text)
        if patch_text is None or not patch_text.isdigit():
            return _Partial(major, minor, None, None)
        return _Partial(major, minor, int(patch_text), Version(major, minor, int(patch_text)))
    try:
        version = Version.parse(text)
    except InvalidVersion:
        raise InvalidSpecifier(
            f"{where}: {text!r} is not a version (expected e.g. 1, 1.2, 1.2.3 or 1.2.3-beta.1)"
        ) from None
    return _Partial(version.major, version.minor, version.patch, version)


def _caret(p: _Partial) -> VersionSet:
    low = p.low()
    if p.major > 0 or p.minor is None:
        high = Version(p.major + 1, 0, 0)
    elif p.minor > 0 or p.patch is None:
        high = Version(0, p.minor + 1, 0)
    else:
        high = Version(0, 0, p.patch + 1)
    return VersionSet([(low, high)])


def _tilde(p: _Partial) -> VersionSet:
    if p.minor is None:
        return VersionSet([(p.low(), Version(p.major + 1, 0, 0))])
    return VersionSet([(p.low(), Version(p.major, p.minor + 1, 0))])


def _clause_set(op: str, p: _Partial) -> VersionSet:
    if op in ("==", "="):
        return VersionSet([(p.low(), p.high())])
    if op == "!=":
        return VersionSet([(p.low(), p.high())]).complement()
    if op == ">=":
        return VersionSet([(p.low(), None)])
    if op == ">":
        return VersionSet([(p.high(), None)])
    if op == "<":
        return VersionSet([(None, p.low())])
    if op == "<=":
        return VersionSet([(None, p.high())])
    if op == "^":
        return _caret(p)
    return _tilde(p)


def _parse_clause(spec: str, clause: str, start: int) -> tuple[VersionSet, bool]:
    """Parse one comparator; `start` is its offset in `spec`, for error messages."""
    stripped = clause.strip()
    offset = start + len(clause) - len(clause.lstrip())
    if not stripped:
        raise InvalidSpecifier(f"invalid specifier {spec!r}: empty clause at position {offset}")
    if stripped == "*":
        return VersionSet.full(), False
    written = next((o for o in _OPERATORS if stripped.startswith(o)), "")
    op = written or "=="
    rest = stripped[len(written) :]
    version_text = rest.strip()
    version_offset = offset + len(stripped) - len(rest.lstrip())
    where = f"invalid specifier {spec!r} at position {version_offset}"
    if not version_text:
        raise InvalidSpecifier(
            f"invalid specifier {spec!r}: expected a version after {op!r} at position {version_offset}"
        )
    partial = _parse_partial(version_text, where=where)
    named_prerelease = partial.full is not None and partial.full.is_prerelease
    return _clause_set(op, partial), named_prerelease


def _split(text: str, sep: str, start: int) -> list[tuple[str, int]]:
    """Split `text` on `sep`, keeping each piece's offset (relative to the original string)."""
    pieces: list[tuple[str, int]] = []
    offset = 0
    for piece in text.split(sep):
        pieces.append((piece, start + offset))
        offset += len(piece) + len(sep)
    return pieces


def _parse(text: str) -> tuple[VersionSet, bool]:
    if not isinstance(text, str):
        raise InvalidSpecifier(f"expected a specifier string, got {type(text).__name__}")
    return _parse_text(text)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> tuple[VersionSet, bool]:
    """Parse (memoised: registries repeat the same few specifiers thousands of times)."""
    if not text.strip():
        return VersionSet.full(), False
    result = VersionSet.empty()
    named_prerelease = False
    for alternative, alt_start in _split(text, "||", 0):
        conjunction = VersionSet.full()
        for clause, start in _split(alternative, ",", alt_start):
            clause_set, named = _parse_clause(text, clause, start)
            conjunction = conjunction.intersection(clause_set)
            named_prerelease = named_prerelease or named
        result = result.union(conjunction)
    return result, named_prerelease


def parse_specifier(text: str) -> VersionSet:
    """Parse a specifier such as ``>=1.2, <2`` or ``^1.2`` into the set of versions it allows.

    ``*`` or an empty string allow every version. Raises `InvalidSpecifier` naming the offending
    text and its position.

    Grammar: clauses separated by ``,`` (AND); ``||`` separates alternatives (OR, what ``str()`` of a
    `VersionSet` may print). A clause is ``*`` or an optional operator (``==``, ``=``, ``!=``, ``>=``,
    ``>``, ``<=``, ``<``, ``^``, ``~``) followed by a version, which may be partial (``1`` or ``1.2``,
    also ``1.2.*`` / ``1.x``). A partial version stands for its whole range, as in cargo: ``==1.2``
    is ``>=1.2.0, <1.3.0``, ``<=1.2`` is ``<1.3.0``, ``>1.2`` is ``>=1.3.0``. A bare version is ``==``.

    Caret: ``^1.2.3`` = ``>=1.2.3, <2.0.0``; ``^0.2.3`` = ``>=0.2.3, <0.3.0``; ``^0.0.3`` =
    ``>=0.0.3, <0.0.4``; ``^1.2`` = ``>=1.2.0, <2.0.0``; ``^0`` = ``>=0.0.0, <1.0.0``.
    Tilde: ``~1.2.3`` = ``>=1.2.3, <1.3.0``; ``~1.2`` = ``>=1.2.0, <1.3.0``; ``~1`` = ``>=1.0.0, <2.0.0``.

    Bounds are plain semver order: ``<2.0.0`` contains ``2.0.0-beta``. Pre-releases are kept out of
    resolutions by a separate rule (`allows_prereleases`): a pre-release is only chosen for a package
    when some specifier constraining it names a pre-release version.
    """
    return _parse(text)[0]


def allows_prereleases(text: str) -> bool:
    """Whether the specifier names a pre-release version (``>=1.0.0-beta``), opting in to them."""
    return _parse(text)[1]


def matching(text: str, versions: Iterable[str]) -> list[str]:
    """The `versions` the specifier `text` lets a fresh resolution choose (pre-releases only when it names one),
    in the order given. Raises `InvalidSpecifier` (or `InvalidVersion` for a version that is no semver)."""
    allowed, pre = _parse(text)
    found = []
    for text_version in versions:
        version = Version.parse(text_version)
        if (pre or not version.prerelease) and version in allowed:
            found.append(text_version)
    return found
