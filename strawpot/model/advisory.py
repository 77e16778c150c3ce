"""Security advisories as the registry stores them and `strawpot audit` reads them: severities and affected ranges.

An advisory's range is a version specifier in the grammar dependencies use (`<1.2.3`, `>=1,<1.4`, `^0.3`), parsed
by the resolver's one parser, so "which versions does it affect" and "which versions does a requirement allow"
never disagree.
"""

from __future__ import annotations

from resolver import Version
from resolver.specifier import parse_specifier
from resolver.version_set import VersionSet

SEVERITIES = ("low", "moderate", "high", "critical")  # lowest first
MAX_SUMMARY = 500  # characters
MAX_RANGE = 200


def severity_rank(severity: str) -> int:
    """0 for low … 3 for critical; ValueError naming the severities for anything else."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError(f"severity {severity!r} is not one of {', '.join(SEVERITIES)}") from None


def affected_set(text: str) -> VersionSet:
    """The versions a range names; ValueError (the parser's message) when it is not a specifier or names every
    version (`*`: an advisory against every version is written as `>=0.0.0`)."""
    text = text.strip()
    if len(text) > MAX_RANGE:
        raise ValueError(f"the range is longer than {MAX_RANGE} characters")
    if text in ("", "*"):
        raise ValueError("the range is empty or '*'; to name every version write '>=0.0.0'")
    from resolver import ResolverError

    try:
        return parse_specifier(text)
    except ResolverError as exc:
        raise ValueError(str(exc)) from None


def affects(text: str, version: str) -> bool:
    """Whether the range `text` holds `version` (False for a range or version that cannot be read)."""
    try:
        return Version.parse(version) in affected_set(text)
    except ValueError:
        return False
