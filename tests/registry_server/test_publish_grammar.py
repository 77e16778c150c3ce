"""What is published follows StrawHub's dependency grammar (`slug`, `slug==X.Y.Z`, `*`): anything else is one 400
naming the entry and the three forms, unless the registry was started with `--allow-ranges`. What was stored
with ranges before still resolves (lenient on read, strict on write)."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from registry_server import SQLiteStorage, create_app, create_token
from registry_server.storage.base import Storage
from tests._cli import strawpot
from tests._live_registry import start_registry
from tests.registry_server._helpers import Api, role, skill
from tests.registry_server.conftest import make_api

FORMS = "'slug' (latest), 'slug==X.Y.Z' (exact) or '*' (every installed package of that kind)"


REFUSED = ["foo>=1.0.0", "foo^1", "foo ==1.0.0", "foo==1.0", "foo~1.0.0", "foo==1.0.0,<2", "foo@1.0.0"]
UNREADABLE = {"role:foo": "'role:foo'", "Foo": "'Foo'", "foo bar": "'bar'", "foo==\u00b9.0.0": "'\u00b9.0.0'",
              "foo==01.0.0": "'01.0.0'"}  # no entry at all: the one reader's error names them


def test_a_published_range_or_other_form_is_one_400_naming_the_entry(api: Api) -> None:
    api.ok("skill", skill("foo"))
    for entry in REFUSED:
        response = api.publish("skill", skill("bad", deps=[entry]))
        assert response.status_code == 400, (entry, response.text)
        error = response.json()["error"]
        assert (f"SKILL.md: metadata.strawpot.dependencies.skills[0]: {entry!r} is not a published dependency: "
                f"use {FORMS}") in error
        assert api.client.get("/api/v1/skills/bad/versions").status_code == 404
    for entry, named in UNREADABLE.items():
        response = api.publish("skill", skill("bad", deps=[entry]))
        assert response.status_code == 400 and "dependencies.skills: invalid" in response.json()["error"]
        assert named in response.json()["error"]


def test_the_three_forms_publish(api: Api) -> None:
    api.ok("skill", skill("foo"))
    api.ok("skill", skill("pinned", deps=["foo==1.0.0"]))
    api.ok("skill", skill("latest", deps=[" foo "]))  # surrounding space is stripped, as StrawHub does
    api.ok("role", role("lead", skills=["*", "foo"], roles=["*"]))
    detail = api.client.get("/api/v1/skills/pinned").json()
    assert detail["latestVersion"]["dependencies"] == {"skills": ["foo==1.0.0"]}


def test_a_role_entry_in_either_list_is_checked_and_every_bad_one_named(api: Api) -> None:
    api.ok("skill", skill("foo"))
    api.ok("role", role("helper"))
    response = api.publish("role", role("bad", skills=["foo^1.0"], roles=["helper>=1"]))
    error = response.json()["error"]
    assert response.status_code == 400
    assert "dependencies.skills[0]: 'foo^1.0' is not a published dependency" in error
    assert "dependencies.roles[0]: 'helper>=1' is not a published dependency" in error


def test_a_batch_member_with_a_range_refuses_the_batch(api: Api) -> None:
    answer = api.batch([("role", role("one", roles=["two^1.0.0"])), ("role", role("two", roles=["one"]))])
    assert answer.status_code == 400
    assert "role one: ROLE.md: metadata.strawpot.dependencies.roles[0]: 'two^1.0.0'" in answer.json()["error"]
    assert api.client.get("/api/v1/roles/two").status_code == 404


def test_allow_ranges_takes_them_and_a_strict_registry_still_reads_what_was_stored(tmp_path: Path) -> None:
    store: Storage = SQLiteStorage(tmp_path / "data")
    try:
        create_token(store, "root", admin=True)
        alice = create_token(store, "alice")
        private = Api(TestClient(create_app(store, rate_limit=0, allow_ranges=True), raise_server_exceptions=False),
                      store, "", alice, "")
        private.ok("skill", skill("foo", "1.2.0"))
        private.ok("skill", skill("ranged", deps=["foo^1.0"]))
        strict = make_api(store)
        assert strict.client.get("/api/v1/skills/ranged/resolve").json()["dependencies"] == [
            {"kind": "skill", "slug": "foo", "version": "1.2.0"}]
        versions = strict.client.get("/api/v1/skills/ranged/versions").json()["versions"]
        assert versions[0]["dependencies"] == {"skills": ["foo^1.0"]}
        assert strict.publish("skill", skill("ranged", "1.1.0", deps=["foo^1.0"]), token=alice).status_code == 400
    finally:
        store.close()


def test_registry_serve_allow_ranges_flag_and_setting(tmp_path: Path) -> None:
    """The real server: strict by default, `--allow-ranges` (or `[registry] allow_ranges`) takes ranges."""
    import httpx

    def publish(url: str, token: str, slug: str, deps: list[str]) -> httpx.Response:
        files = skill(slug, deps=deps)
        return httpx.post(f"{url}/api/v1/skills", headers={"Authorization": f"Bearer {token}"},
                          data={"slug": slug, "version": "1.0.0", "changelog": ""},
                          files=[("files", (name, data)) for name, data in files.items()], timeout=30)

    with start_registry(tmp_path / "strict") as reg:
        assert publish(reg.url, reg.token, "foo", []).status_code == 201
        refused = publish(reg.url, reg.token, "bar", ["foo>=1.0.0"])
        assert refused.status_code == 400 and "is not a published dependency" in refused.json()["error"]
    with start_registry(tmp_path / "ranges", serve_args=("--allow-ranges",)) as reg:
        assert publish(reg.url, reg.token, "foo", []).status_code == 201
        assert publish(reg.url, reg.token, "bar", ["foo>=1.0.0"]).status_code == 201
    help_text = strawpot("registry", "serve", "--help", cwd=Path.cwd()).stdout
    assert "--allow-ranges" in help_text
