"""A registry answer becomes snake_case with times in seconds where it is read; `json_document` rewrites nothing."""

from __future__ import annotations

from strawpot.commands._options import json_document
from strawpot.model.registry_answer import from_registry, snake


def test_a_registry_answer_in_our_shape() -> None:
    answer = {"slug": "a", "displayName": "A", "createdAt": 1763700000000, "updatedAt": None,
              "latestVersion": {"version": "1.0.0", "createdAt": 1763700000500, "files": [{"path": "SKILL.md"}],
                                "dependencies": {"skills": ["b^1"]}},
              "owner": {"handle": "me", "displayName": "Me"}, "stats": {"downloads": 3}, "yanked": False}
    assert from_registry(answer) == {
        "slug": "a", "display_name": "A", "created_at": 1763700000.0, "updated_at": None,
        "latest_version": {"version": "1.0.0", "created_at": 1763700000.5, "files": [{"path": "SKILL.md"}],
                           "dependencies": {"skills": ["b^1"]}},
        "owner": {"handle": "me", "display_name": "Me"}, "stats": {"downloads": 3}, "yanked": False}
    assert from_registry([{"roleId": "r1"}]) == [{"role_id": "r1"}]


def test_a_packages_own_names_are_kept_as_written() -> None:
    answer = {"metadata": {"strawpot": {"defaultAgent": "x"}}, "params": {"maxTokens": 1}, "env": {"apiKey": 1}}
    assert from_registry(answer) == answer
    assert [snake(n) for n in ("displayName", "GITHUB_TOKEN", "slug", "sha256")] == [
        "display_name", "GITHUB_TOKEN", "slug", "sha256"]


def test_json_document_wraps_the_payload_and_rewrites_no_key() -> None:
    payload = {"command": "x", "camelCase": {"createdAt": 1763700000000}, "run_id": "r"}
    assert json_document(payload, command="info") == {
        "schema_version": 2, "command": "info", "camelCase": {"createdAt": 1763700000000}, "run_id": "r"}
