"""Package ids as the solver sees them (`"skill:git-workflow"`) and as users read them."""

from __future__ import annotations

import re

from strawpot.model.kinds import Kind

_ID_RE = re.compile(r"\b(skill|role|agent|memory|integration):([a-z0-9][a-z0-9-]*)")


def package_id(kind: Kind, name: str) -> str:
    return f"{kind.value}:{name}"


def split_id(pid: str) -> tuple[Kind, str]:
    kind, _, name = pid.partition(":")
    return Kind(kind), name


def display(pid: str) -> str:
    """`skill:git-workflow` → `skill git-workflow`."""
    kind, name = split_id(pid)
    return f"{kind.value} {name}"


def humanize(text: str) -> str:
    """Every package id inside a text (a solver explanation) rendered for users."""
    return _ID_RE.sub(lambda m: f"{m.group(1)} {m.group(2)}", text)
