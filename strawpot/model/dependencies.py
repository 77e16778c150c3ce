"""The v1 dependency lists and the edges they mean: one reading for validate, publish, the server and install.

A skill's `metadata.strawpot.dependencies` is a list of skill entries; a role's is `{skills: [...],
roles: [...]}`; the v1 wire shape is always the mapping (`{"skills": [...]}` for a skill). An entry is a
slug optionally followed by a specifier. `*` is never a package: in a role's `roles` it means "every
installed role", in a role's `skills` "every installed skill" (runtime directives resolved at staging); in a
skill's list it is skipped. A package named twice gets one edge whose
specifier is both texts joined with `,` (both must hold). An entry that cannot be parsed is reported, and
no edge is made of it; every reader decides what that costs (validate: an issue; the solver: the version
is unavailable).

What is *published* follows StrawHub's current grammar, exactly three forms: `slug` (latest), `slug==X.Y.Z`
(exact) and `*` (`published_form_problems`). Reading stays lenient: versions stored with `^` or `>=` before
that rule (or on a registry started with `--allow-ranges`) still resolve.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from resolver import ResolverError, parse_requirement
from strawpot.model.display import short_repr, short_text
from strawpot.model.ids import package_id
from strawpot.model.kinds import Kind
from valueclass import Record

GROUPS: dict[Kind, dict[str, Kind]] = {
    Kind.SKILL: {"skills": Kind.SKILL},
    Kind.ROLE: {"skills": Kind.SKILL, "roles": Kind.ROLE},
}
ALL_ROLES = "*"
PUBLISHED_FORMS = "'slug' (latest), 'slug==X.Y.Z' (exact) or '*' (every installed package of that kind)"
# ASCII only: `\d` would take other scripts' digits, which StrawHub refuses. Compiled on first use (publishing and
# validating; an install reads edges only) by re's own cache.
_PUBLISHED_ENTRY = r"[a-z0-9][a-z0-9-]{0,63}(==(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*))?"


class Edge(Record):
    """A dependency on package `name` of `kind`; `spec` is the specifier text (`*` for any version)."""

    kind: Kind
    name: str
    spec: str

    @property
    def id(self) -> str:
        return package_id(self.kind, self.name)


class BadEntry(Record):
    """An entry no edge could be made of: its group, its index in that list (-1: the list itself), why."""

    group: str
    index: int
    message: str


class Edges(Record):
    """A package's declared dependencies, the entries that could not be read, and a role's `*` wildcards."""

    edges: tuple[Edge, ...]
    bad: tuple[BadEntry, ...] = ()
    all_roles: bool = False  # a role's `roles` holds `*`
    all_skills: bool = False  # a role's `skills` holds `*`


def v1_groups(kind: Kind, declared: Any) -> dict[str, Any]:
    """`metadata.strawpot.dependencies` as written in a main file, in the v1 mapping shape."""
    if kind is Kind.SKILL and isinstance(declared, list):
        return {"skills": declared}
    return dict(declared) if isinstance(declared, Mapping) else {}


def wire_groups(kind: Kind, declared: Any) -> dict[str, list[str]]:
    """The v1 API's lists for a version (what a registry stores): string entries stripped, `*` left out."""
    groups = v1_groups(kind, declared)
    return {
        group: [e.strip() for e in entries if isinstance(e, str) and e.strip() != ALL_ROLES]
        for group in GROUPS.get(kind, {})
        if isinstance(entries := groups.get(group) or [], list)
    }


def read_edges(kind: Kind, groups: Mapping[str, Any]) -> Edges:
    """The edges of a `kind` version whose v1 dependency lists are `groups` (unknown groups are ignored)."""
    merged: dict[tuple[Kind, str], Edge] = {}
    bad: list[BadEntry] = []
    wildcards: set[Kind] = set()
    for group, dep_kind in GROUPS.get(kind, {}).items():
        entries = groups.get(group)
        if entries is None:
            continue
        if not isinstance(entries, list):
            bad.append(BadEntry(group, -1, f"must be a list of entries like 'slug' or 'slug==1.0.0', not {short_repr(entries)}"))
            continue
        for index, entry in enumerate(entries):
            if not isinstance(entry, str):
                bad.append(BadEntry(group, index, f"must be a string like 'slug' or 'slug==1.0.0', not {short_repr(entry)}"))
                continue
            if entry.strip() == ALL_ROLES:
                if kind is Kind.ROLE:
                    wildcards.add(dep_kind)
                continue
            try:
                req = parse_requirement(entry)
            except ResolverError as exc:
                bad.append(BadEntry(group, index, short_text(str(exc))))
                continue
            key = (dep_kind, req.name)
            spec = req.text if key not in merged else f"{merged[key].spec},{req.text}"
            merged[key] = Edge(dep_kind, req.name, spec)
    return Edges(tuple(merged.values()), tuple(bad), Kind.ROLE in wildcards, Kind.SKILL in wildcards)


def published_form_problems(kind: Kind, groups: Mapping[str, Any]) -> tuple[BadEntry, ...]:
    """The string entries of a `kind` version's v1 dependency lists that StrawHub's grammar refuses (surrounding
    whitespace aside, as StrawHub strips it). Entries that are no string or no list are `read_edges`' to report."""
    bad: list[BadEntry] = []
    for group in GROUPS.get(kind, {}):
        entries = groups.get(group)
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):
            if not isinstance(entry, str):
                continue
            text = entry.strip()
            if text != ALL_ROLES and re.fullmatch(_PUBLISHED_ENTRY, text) is None:
                bad.append(BadEntry(group, index, f"{short_repr(entry)} is not a published dependency: use "
                                                  f"{PUBLISHED_FORMS}"))
    return tuple(bad)
