"""The registry app in-process over the in-memory and the SQLite storage: v1 shapes and extensions."""

from __future__ import annotations

import hashlib

import pytest

from registry_server.app import create_app
from registry_server.storage.base import Storage
from strawpot.model.archive import build_archive, read_archive
from strawpot.model.kinds import Kind
from tests.registry_server._helpers import BINARY, WRAPPER, Api, agent, role, skill


def test_publish_answers_201_with_ids(api: Api) -> None:
    body = api.ok("skill", skill("git-workflow"))
    assert body["version"] == "1.0.0"
    assert body["skillId"] and body["versionId"]
    assert api.ok("role", role("lead"))["roleId"]


def test_list_items_carry_v1_fields_and_sort(api: Api) -> None:
    api.ok("skill", skill("alpha"))
    api.ok("skill", skill("beta"))
    api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "alpha"})
    items = api.client.get("/api/v1/skills", params={"limit": 10, "sort": "downloads"}).json()["items"]
    assert [i["slug"] for i in items] == ["alpha", "beta"]
    assert items[0]["stats"] == {"downloads": 1, "stars": 0, "versions": 1}
    assert {"displayName", "summary", "updatedAt"} <= set(items[0])
    assert api.client.get("/api/v1/skills", params={"limit": 1}).json()["count"] == 1
    assert api.client.get("/api/v1/skills", params={"sort": "name"}).status_code == 400
    assert api.client.get("/api/v1/roles").json()["items"] == []


def test_detail_and_version_query(api: Api) -> None:
    api.ok("skill", skill("git-workflow", "1.0.0"), changelog="first")
    api.ok("skill", skill("git-workflow", "1.1.0", description="Newer."), displayName="Git Workflow")
    detail = api.client.get("/api/v1/skills/git-workflow").json()
    assert detail["slug"] == "git-workflow" and detail["displayName"] == "Git Workflow"
    assert detail["summary"] == "Newer."
    assert detail["owner"]["handle"] == "alice"
    assert detail["stats"]["versions"] == 2
    assert detail["latestVersion"]["version"] == "1.1.0"
    assert detail["latestVersion"]["files"][0]["path"] == "SKILL.md"
    assert isinstance(detail["latestVersion"]["createdAt"], int)
    old = api.client.get("/api/v1/skills/git-workflow", params={"version": "1.0.0"}).json()
    assert old["latestVersion"]["version"] == "1.0.0" and old["latestVersion"]["changelog"] == "first"
    missing = api.client.get("/api/v1/skills/git-workflow", params={"version": "9.9.9"})
    assert missing.status_code == 404 and "9.9.9" in missing.json()["error"]
    assert api.client.get("/api/v1/skills/nope").status_code == 404


def test_file_endpoint_serves_exact_bytes_per_version(api: Api) -> None:
    files = {**skill("task-planning"), "templates/plan.md": b"# Plan v1\n", "my notes.txt": b"spaced\n"}
    api.ok("skill", files)
    api.ok("skill", {**skill("task-planning", "1.1.0"), "templates/plan.md": b"# Plan v2\n"})
    get = api.client.get
    assert get("/api/v1/skills/task-planning/file", params={"path": "templates/plan.md"}).content == b"# Plan v2\n"
    old = get("/api/v1/skills/task-planning/file", params={"path": "templates/plan.md", "version": "1.0.0"})
    assert old.content == b"# Plan v1\n"
    assert old.headers["content-type"].startswith("text/plain; charset=utf-8")
    assert "immutable" in old.headers["cache-control"]
    # the query string is form-encoded: '+' is a space
    spaced = get("/api/v1/skills/task-planning/file?path=my+notes.txt&version=1.0.0")
    assert spaced.status_code == 200 and spaced.content == b"spaced\n"
    assert get("/api/v1/skills/task-planning/file", params={"path": "nope.md"}).status_code == 404
    main = get("/api/v1/skills/task-planning/file")  # no path: the main file
    assert main.content.startswith(b"---\nname: task-planning")
    again = get("/api/v1/skills/task-planning/file", params={"path": "SKILL.md"},
                headers={"If-None-Match": main.headers["etag"]})
    assert again.status_code == 304


def test_agent_binary_files_and_executable_bit(api: Api) -> None:
    api.ok("agent", agent("stub-agent"))
    got = api.client.get("/api/v1/agents/stub-agent/file", params={"path": "data/blob.bin"})
    assert got.content == BINARY and got.headers["content-type"] == "application/octet-stream"
    versions = api.client.get("/api/v1/agents/stub-agent/versions").json()["versions"]
    files = {f["path"]: f for f in versions[0]["files"]}
    assert files["bin/wrapper"]["executable"] is True
    assert files["AGENT.md"]["executable"] is False and files["data/blob.bin"]["executable"] is False
    assert versions[0]["tools"]["git"]["install"] == {"linux": "apt-get install git"}
    archive = api.client.get("/api/v1/agents/stub-agent/versions/1.0.0/archive").content
    members = {m.path: m for m in read_archive(archive)}
    assert members["bin/wrapper"].executable and members["bin/wrapper"].data == WRAPPER
    assert not members["data/blob.bin"].executable


def test_versions_extension_lists_everything_with_etag(api: Api) -> None:
    api.ok("skill", skill("diff-reading", "1.0.0"))
    api.ok("skill", skill("code-review", "1.0.0", deps=["diff-reading==1.0.0"]))
    api.ok("skill", skill("code-review", "1.10.0", deps=["diff-reading"]))
    api.ok("skill", skill("code-review", "1.2.0-beta.1"), version="1.10.1-beta.1")
    response = api.client.get("/api/v1/skills/code-review/versions")
    assert response.headers["cache-control"] == "no-cache"
    body = response.json()
    assert body["kind"] == "skill" and body["slug"] == "code-review"
    assert [v["version"] for v in body["versions"]] == ["1.0.0", "1.10.0", "1.10.1-beta.1"]
    first = body["versions"][0]
    assert first["dependencies"] == {"skills": ["diff-reading==1.0.0"]}
    assert first["defaultAgent"] is None and first["tools"] == {} and first["yanked"] is False
    archive = api.client.get("/api/v1/skills/code-review/versions/1.0.0/archive")
    assert hashlib.sha256(archive.content).hexdigest() == first["sha256"] == archive.headers["etag"].strip('"')
    assert len(archive.content) == first["size"]
    assert archive.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert archive.headers["content-type"] == "application/gzip"
    etag = response.headers["etag"]
    assert api.client.get("/api/v1/skills/code-review/versions", headers={"If-None-Match": etag}).status_code == 304
    api.ok("skill", skill("code-review", "2.0.0"))
    fresh = api.client.get("/api/v1/skills/code-review/versions", headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.headers["etag"] != etag
    assert api.client.get("/api/v1/skills/nope/versions").status_code == 404


def test_archive_is_deterministic_and_built_from_the_files(api: Api) -> None:
    files = {**skill("task-planning"), "templates/plan.md": b"# Plan\n"}
    api.ok("skill", files)
    got = api.client.get("/api/v1/skills/task-planning/versions/1.0.0/archive").content
    assert got == build_archive(files)
    assert api.client.get("/api/v1/skills/task-planning/versions/2.0.0/archive").status_code == 404


def test_yank_by_owner_or_admin_and_undo(api: Api) -> None:
    api.ok("skill", skill("git-workflow", "1.0.0"))
    api.ok("skill", skill("git-workflow", "1.1.0"))
    url = "/api/v1/skills/git-workflow/versions/1.1.0/yank"
    assert api.client.post(url).status_code == 401
    assert api.client.post(url, headers=api.auth(api.bob)).status_code == 403
    done = api.client.post(url, headers=api.auth(api.alice))
    assert done.json() == {"kind": "skill", "slug": "git-workflow", "version": "1.1.0", "yanked": True}
    assert api.client.get("/api/v1/skills/git-workflow").json()["latestVersion"]["version"] == "1.0.0"
    exact = api.client.get("/api/v1/skills/git-workflow", params={"version": "1.1.0"}).json()
    assert exact["latestVersion"]["yanked"] is True  # still installable by exact version
    assert api.client.get("/api/v1/skills/git-workflow/versions/1.1.0/archive").status_code == 200
    flags = {v["version"]: v["yanked"] for v in api.client.get("/api/v1/skills/git-workflow/versions").json()["versions"]}
    assert flags == {"1.0.0": False, "1.1.0": True}
    undo = api.client.post(url, json={"yanked": False}, headers=api.auth(api.admin))
    assert undo.json()["yanked"] is False
    assert api.client.get("/api/v1/skills/git-workflow").json()["latestVersion"]["version"] == "1.1.0"
    assert api.client.post(url, json={"yanked": "yes"}, headers=api.auth(api.alice)).status_code == 400
    bad = api.client.post("/api/v1/skills/git-workflow/versions/3.0.0/yank", headers=api.auth(api.alice))
    assert bad.status_code == 404


def test_search_scores_slug_then_name_then_description(api: Api) -> None:
    api.ok("skill", skill("review", description="Exact slug."))
    api.ok("skill", skill("review-tools", description="Prefix."))
    api.ok("skill", skill("code-review", description="Substring."))
    api.ok("skill", skill("linting", description="Helps a review go faster."))
    api.ok("skill", skill("unrelated", description="Nothing to see."))
    api.ok("role", role("reviewer", description="A role."))
    body = api.client.get("/api/v1/search", params={"q": "review"}).json()
    slugs = [r["slug"] for r in body["results"]]
    assert slugs[:2] == ["review", "review-tools"]
    assert slugs[-1] == "linting" and "unrelated" not in slugs
    assert body["count"] == len(slugs) == 5
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert {"kind", "slug", "displayName", "summary", "score"} <= set(body["results"][0])
    roles = api.client.get("/api/v1/search", params={"q": "review", "kind": "role"}).json()["results"]
    assert [r["slug"] for r in roles] == ["reviewer"]
    assert api.client.get("/api/v1/search", params={"q": "review", "limit": 1}).json()["count"] == 1
    assert api.client.get("/api/v1/search").status_code == 400
    assert api.client.get("/api/v1/search", params={"q": "x", "kind": "widget"}).status_code == 400


def test_whoami_and_token_errors(api: Api) -> None:
    me = api.client.get("/api/v1/whoami", headers=api.auth(api.alice)).json()
    assert me == {"handle": "alice", "displayName": "alice", "email": "", "role": "user"}
    assert api.client.get("/api/v1/whoami", headers=api.auth(api.admin)).json()["role"] == "admin"
    assert api.client.get("/api/v1/whoami").status_code == 401
    unknown = api.client.get("/api/v1/whoami", headers=api.auth("sh_" + "0" * 40))
    assert unknown.status_code == 401 and unknown.json()["error"] == "unknown token"
    assert api.client.get("/api/v1/whoami", headers={"Authorization": "Basic abc"}).status_code == 401


def test_stars_toggle(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    star = {"kind": "skill", "slug": "git-workflow"}
    assert api.client.post("/api/v1/stars/toggle", json=star).status_code == 401
    assert api.client.post("/api/v1/stars/toggle", json=star, headers=api.auth(api.bob)).json() == {"starred": True, "stars": 1}
    assert api.client.get("/api/v1/skills/git-workflow").json()["stats"]["stars"] == 1
    assert api.client.post("/api/v1/stars/toggle", json=star, headers=api.auth(api.bob)).json() == {"starred": False, "stars": 0}
    missing = api.client.post("/api/v1/stars/toggle", json={"kind": "skill", "slug": "x"}, headers=api.auth(api.bob))
    assert missing.status_code == 404


def test_delete_is_for_moderators_and_keeps_the_slug_reserved(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    assert api.client.delete("/api/v1/skills/git-workflow", headers=api.auth(api.alice)).status_code == 403
    assert api.client.delete("/api/v1/skills/git-workflow", headers=api.auth(api.admin)).json()["deleted"] is True
    assert api.client.get("/api/v1/skills/git-workflow").status_code == 404
    assert api.client.get("/api/v1/skills/git-workflow/versions").status_code == 404
    assert api.client.delete("/api/v1/skills/git-workflow", headers=api.auth(api.admin)).status_code == 404
    # deletes are final: nobody, the owner included, publishes the slug again, and nothing comes back
    for token, version in (("bob", "2.0.0"), ("alice", "1.0.0"), ("alice", "1.1.0")):
        again = api.publish("skill", skill("git-workflow", version), token=token)
        assert again.status_code == 409, again.text
        assert "was deleted from this registry and deletes are final" in again.json()["error"]
    assert api.client.get("/api/v1/skills/git-workflow/versions").status_code == 404


def test_admin_set_role_and_ban(api: Api) -> None:
    set_role = {"handle": "bob", "role": "moderator"}
    assert api.client.post("/api/v1/admin/set-role", json=set_role, headers=api.auth(api.alice)).status_code == 403
    assert api.client.post("/api/v1/admin/set-role", json=set_role, headers=api.auth(api.admin)).json() == set_role
    bad = api.client.post("/api/v1/admin/set-role", json={"handle": "bob", "role": "god"}, headers=api.auth(api.admin))
    assert bad.status_code == 400
    nobody = api.client.post("/api/v1/admin/set-role", json={"handle": "zed", "role": "user"}, headers=api.auth(api.admin))
    assert nobody.status_code == 404
    ban = api.client.post("/api/v1/admin/ban-user", json={"handle": "bob", "blocked": True, "reason": "spam"},
                          headers=api.auth(api.admin))
    assert ban.json() == {"handle": "bob", "blocked": True}
    banned = api.publish("skill", skill("bobs"), token="bob")
    assert banned.status_code == 403 and "banned" in banned.json()["error"]
    api.client.post("/api/v1/admin/ban-user", json={"handle": "bob", "blocked": False}, headers=api.auth(api.admin))
    api.ok("skill", skill("bobs"), token="bob")


def test_downloads_never_fail(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    body = {"kind": "skill", "slug": "git-workflow", "version": "1.0.0"}
    assert api.client.post("/api/v1/downloads", json=body).json() == {"ok": True, "counted": True}
    assert api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "nope"}).json()["counted"] is False
    assert api.client.get("/api/v1/skills/git-workflow").json()["stats"]["downloads"] == 1
    assert api.client.post("/api/v1/downloads", content=b"{").status_code == 400


def test_an_archive_get_counts_a_download(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    url = "/api/v1/skills/git-workflow/versions/1.0.0/archive"
    first = api.client.get(url)  # cold: the version list is loaded on the way
    assert first.status_code == 200
    assert api.client.get(url).content == first.content  # warm: the fast path
    etag = first.headers["etag"]
    assert api.client.get(url, headers={"If-None-Match": etag}).status_code == 304  # revalidation: not counted
    assert api.client.get("/api/v1/skills/git-workflow/versions/9.9.9/archive").status_code == 404
    assert api.client.get("/api/v1/skills/git-workflow").json()["stats"]["downloads"] == 2
    items = api.client.get("/api/v1/skills", params={"sort": "downloads"}).json()["items"]
    assert items[0]["stats"]["downloads"] == 2


def test_download_counts_reach_storage_in_batches(api: Api) -> None:
    from registry_server.state import Registry

    api.ok("skill", skill("git-workflow"))
    reg: Registry = api.client.app.state.registry  # type: ignore[attr-defined]
    for _ in range(3):
        api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "git-workflow"})
    pkg = api.storage.get_package(Kind.SKILL, "git-workflow")
    assert pkg is not None and pkg.downloads in (0, 3)  # written within a second, or now:
    reg.close()
    pkg = api.storage.get_package(Kind.SKILL, "git-workflow")
    assert pkg is not None and pkg.downloads == 3


def test_a_failed_count_flush_keeps_the_counts(api: Api) -> None:
    from registry_server.downloads import DownloadTally

    api.ok("skill", skill("git-workflow"))
    tally = DownloadTally(api.storage, delay=0)
    real, calls = api.storage.add_downloads, []

    def flaky(counts: dict[tuple[Kind, str], int]) -> None:
        calls.append(dict(counts))
        if len(calls) == 1:
            raise OSError("database is locked")
        real(counts)

    api.storage.add_downloads = flaky  # type: ignore[method-assign]
    tally.add(Kind.SKILL, "git-workflow")
    tally.flush()  # fails: logged, counts kept
    tally.add(Kind.SKILL, "git-workflow")
    tally.flush()
    assert calls == [{(Kind.SKILL, "git-workflow"): 1}, {(Kind.SKILL, "git-workflow"): 2}]
    pkg = api.storage.get_package(Kind.SKILL, "git-workflow")
    assert pkg is not None and pkg.downloads == 2


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/v1/widgets"), ("GET", "/api/v1/widgets/x"), ("GET", "/api/v1/widgets/x/versions"),
     ("GET", "/api/v1/widgets/x/file"), ("POST", "/api/v1/widgets"), ("GET", "/api/v1/nothing/here/at/all/x/y")],
)
def test_unknown_kind_or_route_is_json_404(api: Api, method: str, path: str) -> None:
    response = api.client.request(method, path, headers=api.auth(api.alice))
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert "error" in response.json()


def test_no_redirects_and_json_405(api: Api) -> None:
    slash = api.client.get("/api/v1/skills/", follow_redirects=False)
    assert slash.status_code == 404 and "error" in slash.json()
    wrong = api.client.put("/api/v1/skills")
    assert wrong.status_code == 405 and "error" in wrong.json()


def test_openapi_describes_every_route(api: Api) -> None:
    doc = api.client.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    app = create_app(api.storage)
    for route in app.routes:
        path = route.path  # type: ignore[attr-defined]
        assert path in doc["paths"], path
        for method in route.methods - {"HEAD"}:  # type: ignore[attr-defined]
            assert method.lower() in doc["paths"][path], (method, path)


def test_rate_limit_answers_429_with_integer_retry_after(storage: Storage) -> None:
    from tests.registry_server.conftest import make_api

    limited = make_api(storage, rate_limit=1)
    with limited.client:
        codes = [limited.client.get("/api/v1/skills").status_code for _ in range(4)]
        assert codes[:2] == [200, 200] and codes[-1] == 429
        over = limited.client.get("/api/v1/skills")
        assert over.json()["error"].startswith("rate limit exceeded")
        assert int(over.headers["retry-after"]) >= 1
    free = make_api(storage, rate_limit=0)
    with free.client:
        assert all(free.client.get("/api/v1/skills").status_code == 200 for _ in range(50))


@pytest.mark.parametrize(
    "target",
    ["/api/v1/skills/task-planning/versions", "/api/v1/skills/task-planning/file?path=templates/plan.md",
     "/api/v1/skills/task-planning/file?path=templates%2Fplan.md&version=1.0.0"],
)
def test_the_cached_fast_path_answers_exactly_like_the_handlers(api: Api, target: str) -> None:
    api.ok("skill", {**skill("task-planning"), "templates/plan.md": b"# Plan\n"})
    reg = api.client.app.state.registry  # type: ignore[attr-defined]
    reg.versions.invalidate(Kind.SKILL, "task-planning")
    reg.blobs._items.clear()
    slow = api.client.get(target)  # cache miss: through the router and the handler
    assert reg.versions.peek(Kind.SKILL, "task-planning") is not None
    fast = api.client.get(target)  # cache hit: answered before routing
    keys = ("content-type", "content-length", "etag", "cache-control")
    assert slow.status_code == fast.status_code == 200
    assert slow.content == fast.content
    assert [slow.headers.get(k) for k in keys] == [fast.headers.get(k) for k in keys]


def test_large_files_are_served_whole(api: Api) -> None:
    big = bytes(range(256)) * (5 * 4096)  # 5 MB, over the in-memory cache's per-item limit
    api.ok("skill", {**skill("bulky"), "data.bin": big})
    got = api.client.get("/api/v1/skills/bulky/file", params={"path": "data.bin", "version": "1.0.0"})
    assert got.status_code == 200 and got.content == big
    assert got.headers["etag"] == f'"{hashlib.sha256(big).hexdigest()}"'


def test_a_slug_with_a_trailing_newline_is_not_a_slug(api: Api) -> None:
    """`$` in a pattern matches before a final newline; the slug check must not let one through."""
    from registry_server.state import Registry

    api.ok("skill", skill("git-workflow"))
    registry: Registry = api.client.app.state.registry  # type: ignore[attr-defined]
    looked_up: list[str] = []
    load = registry.versions.load
    registry.versions.load = lambda kind, slug: looked_up.append(slug) or load(kind, slug)  # type: ignore[method-assign]
    answer = api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "git-workflow\n", "version": "1.0.0"})
    assert answer.json() == {"ok": True, "counted": False}
    assert looked_up == []
