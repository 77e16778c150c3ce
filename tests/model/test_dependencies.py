"""One reading of the v1 dependency lists: validate, the registry's solver and the client's solver agree."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from hub_client import PackageVersions, VersionInfo
from registry_server.resolve import edges as server_edges
from resolver import Unavailable, Version
from strawpot.install.provider import HubProvider
from strawpot.model.dependencies import Edge, read_edges, v1_groups, wire_groups
from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package

S, R = Kind.SKILL, Kind.ROLE

# (kind, v1 lists, the edges every reader must make, or None where the entries are invalid)
CASES: list[tuple[Kind, dict[str, Any], set[Edge] | None]] = [
    (S, {"skills": ["a", "b>=1.0"]}, {Edge(S, "a", "*"), Edge(S, "b", ">=1.0")}),
    (S, {"skills": ["a^1", "a<1.5"]}, {Edge(S, "a", "^1,<1.5")}),  # named twice: both hold
    (S, {"skills": ["  a  ", "a"]}, {Edge(S, "a", "*,*")}),
    (S, {"skills": ["*", "a"]}, {Edge(S, "a", "*")}),  # `*` is never a package
    (S, {"skills": ["a@1.2.0"]}, {Edge(S, "a", "1.2.0")}),
    (S, {"skills": [], "roles": ["x"]}, set()),  # a skill has no roles group
    (R, {"skills": ["a"], "roles": ["*", "lead"]}, {Edge(S, "a", "*"), Edge(R, "lead", "*")}),
    (R, {"skills": ["a"], "roles": ["a"]}, {Edge(S, "a", "*"), Edge(R, "a", "*")}),  # kinds are namespaces
    (R, {"roles": ["*"]}, set()),
    (S, {"skills": ["Bad Name"]}, None),
    (S, {"skills": ["a", "b>>1"]}, None),
    (R, {"skills": ["a"], "roles": [""]}, None),
]


def _client_edges(kind: Kind, groups: dict[str, Any]) -> set[Edge] | None:
    provider = HubProvider(None)  # type: ignore[arg-type]  # every answer is already known
    pid = f"{kind.value}:root"
    provider._known[pid] = PackageVersions(kind.value, "root", (VersionInfo("1.0.0", dependencies=groups),))
    found = provider.dependencies(pid, Version.parse("1.0.0"))
    if isinstance(found, Unavailable):
        return None
    return {Edge(Kind(d.package.split(":")[0]), d.package.split(":")[1], d.text) for d in found.values()}


def _server_edges(kind: Kind, groups: dict[str, Any]) -> set[Edge] | None:
    found = server_edges(kind, groups)
    if isinstance(found, Unavailable):
        return None
    return {Edge(Kind(pid.split(":")[0]), pid.split(":")[1], d.text) for pid, d in found.items()}


def _validated_edges(kind: Kind, groups: dict[str, Any]) -> set[Edge] | None:
    declared = groups.get("skills", []) if kind is Kind.SKILL else groups
    meta = {"name": "root", "description": "d", "metadata": {"strawpot": {"dependencies": declared}}}
    text = f"---\n{yaml.safe_dump(meta)}---\nbody\n"
    try:
        package = parse_package({kind.main_file: text.encode()}, kind=kind)
    except PackageInvalid:
        return None
    return {Edge(d.kind, d.name, d.spec) for d in package.dependencies}


@pytest.mark.parametrize(("kind", "groups", "expected"), CASES)
def test_every_reader_makes_the_same_edges(kind: Kind, groups: dict[str, Any], expected: set[Edge] | None) -> None:
    model = read_edges(kind, groups)
    assert (None if model.bad else set(model.edges)) == expected
    assert _server_edges(kind, groups) == expected
    assert _client_edges(kind, groups) == expected
    if kind is Kind.ROLE or "roles" not in groups:  # a skill's frontmatter is a flat list: no roles to write
        assert _validated_edges(kind, groups) == expected


def test_the_all_roles_directive_is_seen_only_in_roles() -> None:
    assert read_edges(R, {"roles": ["*"]}).all_roles
    assert not read_edges(R, {"skills": ["*"]}).all_roles
    assert not read_edges(S, {"skills": ["*"]}).all_roles


def test_bad_entries_say_where() -> None:
    found = read_edges(R, {"skills": "a", "roles": ["ok", {"deep": [1, 2]}, 7]})
    assert [(b.group, b.index) for b in found.bad] == [("skills", -1), ("roles", 1), ("roles", 2)]
    assert found.bad[1].message == "must be a string like 'slug' or 'slug==1.0.0', not {'deep': [1, 2]}"
    assert found.edges == (Edge(R, "ok", "*"),)


def test_wire_groups_are_what_a_registry_stores() -> None:
    assert wire_groups(S, [" a ", "*"]) == {"skills": ["a"]}
    assert wire_groups(R, {"roles": ["*", "lead"]}) == {"skills": [], "roles": ["lead"]}
    assert wire_groups(Kind.AGENT, None) == {}
    assert v1_groups(S, ["a"]) == {"skills": ["a"]}
