"""Counts in messages: "1 package", "2 packages", "0 stars" (English plurals of the nouns we print)."""

from __future__ import annotations


def noun(n: int, singular: str) -> str:
    """`singular` for one, its plural otherwise (`entry` → `entries`, `match` → `matches`, `file` → `files`)."""
    if n == 1:
        return singular
    if singular.endswith("y") and singular[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return singular[:-1] + "ies"
    if singular.endswith(("s", "x", "z", "ch", "sh")):
        return singular + "es"
    return singular + "s"


def count(n: int, singular: str) -> str:
    """`n` and the noun that goes with it: `count(1, "package")` is "1 package"."""
    return f"{n} {noun(n, singular)}"
