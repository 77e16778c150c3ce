"""`GET /skills|roles/{slug}/resolve`: our PubGrub solver, leaves first, conflicts are 400s with the reason."""

from __future__ import annotations

import pytest

from tests.registry_server._helpers import Api, agent, role, skill

# A registry started with `--allow-ranges`: these tests exercise the server's solver on dependency ranges, which a
# private registry may publish and every registry still reads (versions stored before StrawHub's grammar).
pytestmark = pytest.mark.allow_ranges


def resolved(api: Api, kind: str, slug: str, **params: str) -> list[tuple[str, str, str]]:
    response = api.client.get(f"/api/v1/{kind}s/{slug}/resolve", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body[kind] == slug
    return [(d["kind"], d["slug"], d["version"]) for d in body["dependencies"]]


def test_leaves_first_root_excluded_wildcard_never_listed(api: Api) -> None:
    api.ok("skill", skill("diff-reading", "1.0.0"))
    api.ok("skill", skill("code-review", "1.2.0", deps=["diff-reading^1.0"]))
    api.ok("role", role("implementer", skills=["diff-reading"]))
    api.ok("role", role("reviewer", skills=["code-review^1.2"], roles=["implementer", "*"]))
    api.ok("role", role("lead", roles=["reviewer^1.0", "*"]))
    order = resolved(api, "role", "lead")
    assert ("role", "lead", "1.0.0") not in order and all(slug != "*" for _, slug, _ in order)
    assert order.index(("skill", "diff-reading", "1.0.0")) < order.index(("skill", "code-review", "1.2.0"))
    assert order.index(("skill", "code-review", "1.2.0")) < order.index(("role", "reviewer", "1.0.0"))
    assert order.index(("role", "implementer", "1.0.0")) < order.index(("role", "reviewer", "1.0.0"))
    assert len(order) == 4
    assert resolved(api, "skill", "code-review") == [("skill", "diff-reading", "1.0.0")]
    assert resolved(api, "skill", "diff-reading") == []


def test_picks_highest_compatible_and_skips_yanked(api: Api) -> None:
    for version in ("1.0.0", "1.4.0", "2.0.0"):
        api.ok("skill", skill("git-workflow", version))
    api.ok("skill", skill("pr", "1.0.0", deps=["git-workflow^1.0"]))
    assert resolved(api, "skill", "pr") == [("skill", "git-workflow", "1.4.0")]
    api.client.post("/api/v1/skills/git-workflow/versions/1.4.0/yank", headers=api.auth(api.alice))
    assert resolved(api, "skill", "pr") == [("skill", "git-workflow", "1.0.0")]


def test_version_query_resolves_an_older_root(api: Api) -> None:
    api.ok("skill", skill("a", "1.0.0"))
    api.ok("skill", skill("b", "1.0.0"))
    api.ok("skill", skill("root", "1.0.0", deps=["a"]))
    api.ok("skill", skill("root", "2.0.0", deps=["b"]))
    assert resolved(api, "skill", "root") == [("skill", "b", "1.0.0")]
    assert resolved(api, "skill", "root", version="1.0.0") == [("skill", "a", "1.0.0")]


def test_a_diamond_conflict_is_a_400_with_the_explanation(api: Api) -> None:
    api.ok("skill", skill("shared", "1.0.0"))
    api.ok("skill", skill("shared", "2.0.0"))
    api.ok("skill", skill("left", deps=["shared^1.0"]))
    api.ok("skill", skill("right", deps=["shared^2.0"]))
    api.ok("role", role("both", skills=["left", "right"]))
    response = api.client.get("/api/v1/roles/both/resolve")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "cannot resolve the dependencies of role both 1.0.0" in error
    assert "skill left" in error and "skill right" in error and "skill shared" in error


def test_a_dependency_gone_from_the_registry_is_a_400(api: Api) -> None:
    api.ok("skill", skill("doomed"))
    api.ok("skill", skill("user", deps=["doomed"]))
    api.client.delete("/api/v1/skills/doomed", headers=api.auth(api.admin))
    response = api.client.get("/api/v1/skills/user/resolve")
    assert response.status_code == 400 and "skill doomed" in response.json()["error"]


def test_resolve_is_for_skills_and_roles(api: Api) -> None:
    api.ok("agent", agent("stub-agent"))
    assert api.client.get("/api/v1/agents/stub-agent/resolve").status_code == 404
    assert api.client.get("/api/v1/skills/nope/resolve").status_code == 404
