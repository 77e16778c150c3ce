"""package_versions: the /versions extension, ETag revalidation, the v1 fallback, offline and concurrency."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from hub_client import Cache, HubClient, NotFound, OfflineMiss, PackageVersions, ProtocolError

VERSIONS = "/api/v1/roles/reviewer/versions"
DETAIL = "/api/v1/roles/reviewer"


def entry(version: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": version,
        "dependencies": {"skills": ["code-review^1.0"], "roles": []},
        "defaultAgent": "stub-agent",
        "tools": {},
        "sha256": "a" * 64,
        "size": 10,
        "files": [{"path": "ROLE.md", "size": 10, "sha256": "b" * 64, "executable": False}],
        "yanked": False,
        "createdAt": 1763700000000,
    }
    return base | extra


def versions_body(kind: str, slug: str, *versions: str) -> dict[str, Any]:
    return {"kind": kind, "slug": slug, "versions": [entry(v) for v in versions]}


def detail_body(slug: str, version: str) -> dict[str, Any]:
    return {
        "slug": slug,
        "displayName": slug,
        "summary": "",
        "dependencies": {"skills": ["code-review"]},
        "latestVersion": {
            "version": version,
            "changelog": "",
            "dependencies": {"skills": ["code-review"]},
            "files": [{"path": "ROLE.md", "size": 42}],
            "createdAt": 1763700000000,
        },
    }


def test_versions_are_parsed(registry, make_client) -> None:
    registry.on(
        "GET", VERSIONS, httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0", "1.2.0"))
    )
    result = make_client().package_versions("role", "reviewer")
    assert [v.version for v in result.versions] == ["1.0.0", "1.2.0"]
    assert result.has_archives is True
    assert result.versions[1].default_agent == "stub-agent"
    assert result.versions[1].dependencies == {"skills": ["code-review^1.0"], "roles": []}


def test_plural_kind_is_accepted(registry, make_client) -> None:
    registry.on("GET", VERSIONS, httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0")))
    assert make_client().package_versions("roles", "reviewer").kind == "role"


def test_etag_revalidation_answers_304_from_the_cache(registry, make_client) -> None:
    fresh = httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0"), headers={"ETag": '"v1"'})
    seen: list[str | None] = []

    def not_modified(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("If-None-Match"))
        return httpx.Response(304)

    registry.on("GET", VERSIONS, fresh, not_modified)
    first = make_client().package_versions("role", "reviewer")
    second = make_client().package_versions("role", "reviewer")  # a new client: only the cache is shared
    assert seen == ['"v1"']
    assert second == first
    assert registry.count("GET", VERSIONS) == 2


def test_changed_body_replaces_the_cached_one(registry, make_client, cache: Cache) -> None:
    registry.on(
        "GET",
        VERSIONS,
        httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0"), headers={"ETag": '"v1"'}),
        httpx.Response(
            200, json=versions_body("role", "reviewer", "1.0.0", "2.0.0"), headers={"ETag": '"v2"'}
        ),
    )
    make_client().package_versions("role", "reviewer")
    latest = make_client().package_versions("role", "reviewer")
    assert [v.version for v in latest.versions] == ["1.0.0", "2.0.0"]
    stored = cache.get_metadata("http://hub.test", "role", "reviewer")
    assert stored is not None and stored.etag == '"v2"'


def test_without_a_cache_no_conditional_request_is_sent(registry, make_client) -> None:
    registry.on(
        "GET",
        VERSIONS,
        httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0"), headers={"ETag": '"v1"'}),
    )
    client = make_client(cache=None)
    client.package_versions("role", "reviewer")
    client.package_versions("role", "reviewer")
    assert [r.headers.get("If-None-Match") for r in registry.requests] == [None, None]


def test_fallback_to_v1_detail_when_the_route_is_missing(registry, make_client) -> None:
    # /versions is not routed: the fake answers a plain-text 404 like a v1-only server
    registry.on("GET", DETAIL, httpx.Response(200, json=detail_body("reviewer", "1.4.0")))
    registry.on(
        "GET", "/api/v1/skills/code-review", httpx.Response(200, json=detail_body("code-review", "2.0.0"))
    )
    client = make_client()
    result = client.package_versions("role", "reviewer")
    assert result.has_archives is False
    assert [v.version for v in result.versions] == ["1.4.0"]
    assert result.versions[0].sha256 is None
    assert result.versions[0].dependencies == {"skills": ["code-review"]}
    client.package_versions("skill", "code-review")
    assert registry.count("GET", VERSIONS) == 1
    assert registry.count("GET", "/api/v1/skills/code-review/versions") == 0  # not probed again


@pytest.mark.parametrize(
    "missing",
    [httpx.Response(405, text="Method Not Allowed"), httpx.Response(404, json={"error": "no route"})],
)
def test_fallback_on_405_or_json_404_when_the_detail_exists(registry, make_client, missing) -> None:
    registry.on("GET", VERSIONS, missing)
    registry.on("GET", DETAIL, httpx.Response(200, json=detail_body("reviewer", "1.4.0")))
    client = make_client()
    assert client.package_versions("role", "reviewer").has_archives is False
    client.package_versions("role", "reviewer")
    assert registry.count("GET", VERSIONS) == 1


def test_unknown_slug_is_not_found_and_the_extension_is_not_written_off(registry, make_client) -> None:
    registry.on(
        "GET", "/api/v1/roles/nope/versions", httpx.Response(404, json={"error": "role 'nope' not found"})
    )
    registry.on("GET", "/api/v1/roles/nope", httpx.Response(404, json={"error": "role 'nope' not found"}))
    registry.on("GET", VERSIONS, httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0")))
    client = make_client()
    with pytest.raises(NotFound, match="role 'nope' not found"):
        client.package_versions("role", "nope")
    assert client.package_versions("role", "reviewer").has_archives is True


def test_unknown_slug_on_a_known_extension_server_needs_no_detail_probe(registry, make_client) -> None:
    registry.on("GET", VERSIONS, httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0")))
    registry.on(
        "GET", "/api/v1/roles/nope/versions", httpx.Response(404, json={"error": "role 'nope' not found"})
    )
    client = make_client()
    client.package_versions("role", "reviewer")
    with pytest.raises(NotFound) as info:
        client.package_versions("role", "nope")
    assert info.value.url == "http://hub.test/api/v1/roles/nope/versions"
    assert registry.count("GET", "/api/v1/roles/nope") == 0


def test_a_body_for_another_package_is_a_protocol_error(registry, make_client, cache: Cache) -> None:
    registry.on("GET", VERSIONS, httpx.Response(200, json=versions_body("role", "someone-else", "1.0.0")))
    with pytest.raises(ProtocolError):
        make_client().package_versions("role", "reviewer")
    assert cache.get_metadata("http://hub.test", "role", "reviewer") is None


def test_html_instead_of_json_is_a_protocol_error(registry, make_client) -> None:
    registry.on("GET", VERSIONS, httpx.Response(200, html="<html>login</html>"))
    with pytest.raises(ProtocolError, match="text/html"):
        make_client().package_versions("role", "reviewer")


def test_offline_answers_from_the_cache_without_requests(registry, make_client) -> None:
    registry.on("GET", VERSIONS, httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0")))
    online = make_client().package_versions("role", "reviewer")
    before = len(registry.requests)
    assert make_client(offline=True).package_versions("role", "reviewer") == online
    assert len(registry.requests) == before


def test_offline_fallback_metadata_is_cached_too(registry, make_client) -> None:
    registry.on("GET", DETAIL, httpx.Response(200, json=detail_body("reviewer", "1.4.0")))
    make_client().package_versions("role", "reviewer")
    offline = make_client(offline=True).package_versions("role", "reviewer")
    assert offline.has_archives is False and offline.versions[0].version == "1.4.0"


def test_offline_miss(registry, make_client) -> None:
    with pytest.raises(OfflineMiss, match="reviewer"):
        make_client(offline=True).package_versions("role", "reviewer")
    assert registry.requests == []


def test_invalid_slug_never_reaches_the_network(registry, make_client) -> None:
    with pytest.raises(ValueError):
        make_client().package_versions("role", "../admin")
    assert registry.requests == []


def test_many_are_fetched_concurrently_and_keyed_by_item(registry, make_client) -> None:
    barrier = threading.Barrier(3, timeout=60)

    def concurrent(body: dict[str, Any]) -> Callable[[httpx.Request], httpx.Response]:
        def reply(request: httpx.Request) -> httpx.Response:
            barrier.wait()  # only passes when three requests are in flight at once
            return httpx.Response(200, json=body)

        return reply

    registry.on("GET", "/api/v1/skills/a/versions", concurrent(versions_body("skill", "a", "1.0.0")))
    registry.on("GET", "/api/v1/skills/b/versions", concurrent(versions_body("skill", "b", "2.0.0")))
    registry.on("GET", "/api/v1/roles/c/versions", concurrent({"error": "boom"}))
    items = [("skill", "a"), ("skill", "b"), ("role", "c"), ("skill", "a")]
    results = make_client(max_workers=4).package_versions_many(items)
    assert list(results) == [("skill", "a"), ("skill", "b"), ("role", "c")]
    a, b = results[("skill", "a")], results[("skill", "b")]
    assert isinstance(a, PackageVersions) and a.slug == "a" and a.versions[0].version == "1.0.0"
    assert isinstance(b, PackageVersions) and b.slug == "b" and b.versions[0].version == "2.0.0"
    assert isinstance(results[("role", "c")], ProtocolError)
    assert registry.count("GET", "/api/v1/skills/a/versions") == 1  # duplicates fetched once


def test_many_reports_not_found_per_item(registry, make_client) -> None:
    registry.on(
        "GET", "/api/v1/skills/a/versions", httpx.Response(200, json=versions_body("skill", "a", "1.0.0"))
    )
    registry.on(
        "GET", "/api/v1/skills/gone/versions", httpx.Response(404, json={"error": "skill 'gone' not found"})
    )
    registry.on("GET", "/api/v1/skills/gone", httpx.Response(404, json={"error": "skill 'gone' not found"}))
    results = make_client().package_versions_many([("skill", "gone"), ("skill", "a")])
    assert isinstance(results[("skill", "gone")], NotFound)
    assert isinstance(results[("skill", "a")], PackageVersions)


def test_client_is_a_context_manager(registry) -> None:
    registry.on("GET", "/api/v1/search", httpx.Response(200, json={"results": [], "count": 0}))
    with HubClient("http://hub.test/api/v1/", transport=registry.transport) as client:
        assert client.base_url == "http://hub.test"
        client.search("x")
    assert str(registry.requests[0].url).startswith("http://hub.test/api/v1/search?")
    with pytest.raises(RuntimeError):
        client.search("x")


def test_the_verbose_log_times_each_request_and_names_the_revalidation(registry, make_client, caplog) -> None:
    import logging
    import re

    fresh = httpx.Response(200, json=versions_body("role", "reviewer", "1.0.0"), headers={"ETag": '"v\x1b1"'})
    registry.on("GET", VERSIONS, fresh, httpx.Response(304))
    with caplog.at_level(logging.INFO, logger="hub_client"):
        make_client().package_versions("role", "reviewer")
        make_client().package_versions("role", "reviewer")
    lines = [r.getMessage() for r in caplog.records if r.name == "hub_client"]
    assert re.fullmatch(r"GET \S+/roles/reviewer/versions 200 OK \d+ ms", lines[0]), lines
    assert re.fullmatch(r"GET \S+/roles/reviewer/versions 304 Not Modified \d+ ms", lines[1]), lines
    # the ETag is the registry's text: shown without its control characters
    assert lines[2] == 'cache: role reviewer metadata revalidated (ETag "v?1", 304 Not Modified)', lines
    assert len(lines) == 3
