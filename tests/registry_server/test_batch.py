"""`POST /api/v1/batch`: members that depend on each other published together, all or none, on every backend."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from registry_server import SQLiteStorage
from registry_server import batch as batch_module
from registry_server.storage.backends import StorageSpec, open_storage
from tests._services import Postgres
from tests.registry_server._helpers import Api, batch_body, role, skill

_fresh = itertools.count(1)


def cycle() -> list[tuple[str, dict[str, bytes]]]:
    """The gstack shape: a skill, two roles that need each other, a role that needs both."""
    return [
        ("skill", skill("notes")),
        ("role", role("designer", skills=["notes"], roles=["checker"])),
        ("role", role("checker", roles=["designer"])),
        ("role", role("lead", roles=["designer", "checker==1.0.0"])),
    ]


def versions(api: Api, plural: str, slug: str) -> list[str]:
    answer = api.client.get(f"/api/v1/{plural}/{slug}/versions")
    return [v["version"] for v in answer.json()["versions"]] if answer.status_code == 200 else []


def nothing_published(api: Api) -> bool:
    return all(not versions(api, p, s) for p, s in
               (("skills", "notes"), ("roles", "designer"), ("roles", "checker"), ("roles", "lead")))


def test_a_cycle_and_what_needs_it_are_published_together(api: Api) -> None:
    answer = api.batch(cycle())
    assert answer.status_code == 201, answer.text
    published = answer.json()["published"]
    assert [(p["kind"], p["slug"], p["version"]) for p in published] == [
        ("skill", "notes", "1.0.0"), ("role", "designer", "1.0.0"), ("role", "checker", "1.0.0"), ("role", "lead", "1.0.0")]
    assert versions(api, "roles", "designer") == versions(api, "roles", "checker") == ["1.0.0"]
    resolved = api.client.get("/api/v1/roles/lead/resolve").json()
    assert {(d["kind"], d["slug"]) for d in resolved["dependencies"]} == {
        ("skill", "notes"), ("role", "designer"), ("role", "checker")}
    archive = api.client.get("/api/v1/roles/checker/versions/1.0.0/archive")
    assert archive.status_code == 200


def test_one_invalid_member_publishes_none_and_names_it(api: Api) -> None:
    members = cycle()
    members[2] = ("role", {**role("checker", roles=["designer"]), "notes.md": b"a role is exactly ROLE.md"})
    answer = api.batch(members)
    assert answer.status_code == 400
    problems = answer.json()["issues"]
    assert problems and all(p.startswith("role checker: ") for p in problems), problems
    assert nothing_published(api)


def test_a_cycle_through_a_package_outside_the_batch_is_refused(api: Api) -> None:
    members = [("role", role("designer", roles=["checker"]))]
    answer = api.batch(members)
    assert answer.status_code == 400
    assert "role designer: dependencies: role 'checker' does not exist in this registry" in answer.json()["error"]
    assert nothing_published(api)


def test_a_member_whose_version_exists_already_fails_the_whole_batch(api: Api) -> None:
    api.ok("skill", skill("notes"))
    answer = api.batch(cycle())
    assert answer.status_code == 400
    assert "skill notes: version: version 1.0.0 already exists" in answer.json()["error"]
    assert versions(api, "roles", "designer") == [] and versions(api, "skills", "notes") == ["1.0.0"]


def test_a_member_of_another_owner_fails_the_whole_batch(api: Api) -> None:
    api.ok("skill", skill("notes"), token="bob")
    answer = api.batch([("skill", skill("notes", "1.1.0")), ("role", role("designer", skills=["notes"]))])
    assert answer.status_code == 403
    assert versions(api, "roles", "designer") == []


def test_one_slug_twice_and_an_unknown_kind_are_refused(api: Api) -> None:
    answer = api.batch([("skill", skill("notes")), ("skill", skill("notes", "1.1.0")), ("tool", skill("x"))])
    assert answer.status_code == 400
    assert "2.kind: 'tool' is not one of" in answer.json()["error"]


def test_limits_on_members_and_bytes(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    over = [("skill", skill(f"s{i}")) for i in range(batch_module.MAX_BATCH + 1)]
    answer = api.batch(over)
    assert answer.status_code == 413 and f"at most {batch_module.MAX_BATCH} packages" in answer.json()["error"]
    monkeypatch.setattr(batch_module, "MAX_BATCH_BYTES", 2000)
    answer = api.batch([("skill", {**skill("notes"), "big.md": b"x" * 3000})])
    assert answer.status_code == 413 and "2000 bytes" in answer.json()["error"]
    assert nothing_published(api)


def test_without_a_token_nothing_is_read(api: Api) -> None:
    assert api.batch(cycle(), token=None).status_code == 401
    assert nothing_published(api)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_crash_before_commit_leaves_no_member_visible(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.registry_server.conftest import make_api

    store = SQLiteStorage(tmp_path / "data") if backend == "sqlite" else open_storage(
        StorageSpec(tmp_path / "data", pg_schema(request.getfixturevalue("pg"))))
    api = make_api(store)

    def crash() -> None:
        raise RuntimeError("power cut")

    monkeypatch.setattr(store, "_before_commit", crash)
    assert api.batch(cycle()).status_code == 500
    monkeypatch.undo()
    assert nothing_published(api)
    assert api.batch(cycle()).status_code == 201
    store.close()


def pg_schema(pg: Postgres) -> str:
    """The address of a fresh, empty schema of the session's PostgreSQL cluster."""
    import psycopg

    name = f"batch{os.getpid()}_{next(_fresh)}"
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}".encode())
    return pg.url(options=f"-csearch_path%3D{name}")


@pytest.mark.parametrize("index", ["¹", "٣", "0x1", "+1", " 1", "01"])
def test_a_field_index_that_is_not_plain_ascii_digits_is_a_400_naming_it(api: Api, index: str) -> None:
    body = batch_body([("skill", skill("notes"))])
    body["data"][f"{index}.kind"] = "skill"  # `str.isdigit` says yes to "¹", which `int` then refuses
    body["files"].append((f"{index}.files", ("extra.md", b"x", "application/octet-stream")))
    answer = api.client.post("/api/v1/batch", **body, headers=api.auth(api.alice))
    assert answer.status_code == 400, answer.text
    assert f"form field {index + '.kind'!r}: a batch names every field `<n>.<field>`" in answer.json()["error"]
    assert nothing_published(api)
