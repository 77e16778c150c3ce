"""Advisories in every storage backend (memory, SQLite, PostgreSQL), and `GET /api/v1/advisories` over them."""

from __future__ import annotations

from registry_server.storage.base import Advisory, Storage
from strawpot.model.kinds import Kind
from tests.registry_server.conftest import Api


def test_every_backend_stores_and_filters_advisories(storage: Storage) -> None:
    first = storage.add_advisory(Advisory(Kind.SKILL, "git-flow", "<1.2.3", "high", "leaks the diff"))
    second = storage.add_advisory(Advisory(Kind.ROLE, "git-flow", ">=2", "low", "typo in the prompt"))
    assert first.id and second.id and first.id != second.id and first.created_at > 0
    assert storage.advisories() == [first, second]
    assert storage.advisories(Kind.SKILL) == [first]
    assert storage.advisories(None, "git-flow") == [first, second]
    assert storage.advisories(Kind.ROLE, "git-flow") == [second]
    assert storage.advisories(Kind.AGENT) == [] and storage.advisories(None, "other") == []


def test_the_endpoint_answers_every_backend(api: Api) -> None:
    stored = api.storage.add_advisory(Advisory(Kind.SKILL, "git-flow", ">=1.0.0, <1.2", "critical", "bad"))
    answer = api.client.get("/api/v1/advisories", params={"kind": "skills", "slug": "git-flow"})
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-cache"
    assert answer.json() == {"format": 1, "advisories": [{
        "id": stored.id, "kind": "skill", "slug": "git-flow", "range": ">=1.0.0, <1.2", "severity": "critical",
        "summary": "bad", "createdAt": stored.created_at}]}
    bad = api.client.get("/api/v1/advisories", params={"slug": "Not A Slug"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("slug: ")
