"""Package ids as the solver and the lock see them (`skill:git-workflow`) and as users read them."""

from __future__ import annotations

import re

from resolver.requirement import SLUG_PATTERN
from strawpot.model.kinds import Kind

_ID_RE = re.compile(rf"\b({'|'.join(k.value for k in Kind)}):({SLUG_PATTERN.pattern.removeprefix('^').removesuffix('$')})")


def package_id(kind: Kind, name: str) -> str:
    return f"{kind.value}:{name}"


def split_id(pid: str) -> tuple[Kind, str]:
    """The kind and name of `skill:git-workflow`; ValueError for a string that is not an id."""
    kind, sep, name = pid.partition(":")
    if not sep:
        raise ValueError(f"{pid!r} is not a package id (KIND:NAME)")
    return Kind(kind), name


def display(pid: str) -> str:
    """`skill:git-workflow` → `skill git-workflow`."""
    kind, name = split_id(pid)
    return f"{kind.value} {name}"


def humanize(text: str) -> str:
    """Every package id inside a text (a solver explanation) rendered for users."""
    return _ID_RE.sub(lambda m: f"{m.group(1)} {m.group(2)}", text)
