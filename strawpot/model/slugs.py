"""What a package's name (its slug) may be, checked without loading the package model or the resolver."""

from __future__ import annotations

from resolver.slug import SLUG_MAX_LENGTH, SLUG_PATTERN
from strawpot.model.display import short_repr


def slug_error(slug: str) -> str | None:
    """Why `slug` is not a valid package name, or None when it is."""
    if len(slug) > SLUG_MAX_LENGTH:
        return f"{short_repr(slug)} is longer than {SLUG_MAX_LENGTH} characters"
    if not SLUG_PATTERN.fullmatch(slug):  # match() would let a trailing newline through ('$')
        return f"{slug!r} is not a valid slug (lowercase letters, digits and '-', starting with a letter or digit)"
    return None
