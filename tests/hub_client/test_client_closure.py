"""closure(): `POST /closure` from the client's side, against a respx router (the live tests are in
tests/install/test_closure_live.py): parsing, `known` ETags, answers discarded whole, an absent extension
remembered, and the session's retry rules for a POST."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import respx

from hub_client import Cache, PackageVersions, RegistryUnreachable, SizeLimits

BASE = "http://hub.test"
CLOSURE = "/api/v1/closure"


def entry(version: str, deps: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {
        "version": version,
        "dependencies": deps or {},
        "sha256": "a" * 64,
        "size": 10,
        "files": [{"path": "SKILL.md", "size": 10, "sha256": "b" * 64, "executable": False}],
        "yanked": False,
        "createdAt": 1763700000000,
    }


def doc(kind: str, slug: str, *versions: str, deps: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"kind": kind, "slug": slug, "versions": [entry(v, deps) for v in versions]}


LEAD = doc("role", "lead", "1.0.0", "1.1.0", deps={"skills": ["leaf^1.0"], "roles": []})
LEAF = doc("skill", "leaf", "1.0.0")


def answer(*docs: dict[str, Any], unchanged: tuple[str, ...] = (), missing: tuple[str, ...] = (),
           complete: bool = True) -> dict[str, Any]:
    return {
        "packages": [{"etag": f'"{d["slug"]}-etag"', "versions": d} for d in docs],
        "unchanged": list(unchanged),
        "missing": list(missing),
        "complete": complete,
        "limit": 1000,
    }


def sent(route: respx.Route, call: int = -1) -> Any:
    return json.loads(route.calls[call].request.content)


def cached_etags(cache: Cache, *keys: tuple[str, str]) -> list[str | None]:
    return [(hit.etag if (hit := cache.get_metadata(BASE, *key)) else None) for key in keys]


# -- good answers -----------------------------------------------------------------------------------


def test_a_good_answer_is_parsed_into_the_documents_and_cached(router, client, cache) -> None:
    route = router.post(CLOSURE).respond(200, json=answer(LEAD, LEAF))
    found = client.closure([("roles", "lead")])
    assert found is not None and set(found) == {("role", "lead"), ("skill", "leaf")}
    assert found[("role", "lead")] == PackageVersions.from_versions_json(LEAD)
    assert [v.version for v in found[("role", "lead")].versions] == ["1.0.0", "1.1.0"]
    assert found[("role", "lead")].versions[0].dependencies == {"skills": ["leaf^1.0"], "roles": []}
    assert sent(route) == {"roots": [{"kind": "role", "slug": "lead"}], "known": {}}
    assert route.calls[0].request.headers["Content-Type"] == "application/json"
    # each document is cached as its own `versions` answer, with its ETag, for the next revalidation; the
    # writes run beside the caller (write_behind), and close() waits for them
    client.close()
    assert cached_etags(cache, ("role", "lead"), ("skill", "leaf")) == ['"lead-etag"', '"leaf-etag"']
    stored = cache.get_metadata(BASE, "skill", "leaf")
    assert stored is not None and stored.source == "versions" and stored.body == LEAF


def test_known_etags_are_sent_and_unchanged_documents_come_from_the_cache(router, client, cache) -> None:
    cache.put_metadata(BASE, "skill", "leaf", LEAF, etag='"leaf-old"', source="versions")
    cache.put_metadata(BASE, "role", "lead", doc("role", "lead", "0.9.0"), etag='"lead-old"', source="versions")
    # a v1 detail in the cache has no ETag to offer: it is not sent as known
    cache.put_metadata(BASE, "skill", "plain", {"slug": "plain", "latestVersion": None}, etag=None, source="detail")
    route = router.post(CLOSURE).respond(200, json=answer(LEAD, unchanged=("skill:leaf",)))
    found = client.closure([("role", "lead")], hints=[("skill", "leaf"), ("skill", "plain"), ("skill", "Not A Slug"),
                                                      ("widget", "x")])
    assert sent(route)["known"] == {"role:lead": '"lead-old"', "skill:leaf": '"leaf-old"'}
    assert found is not None and set(found) == {("role", "lead"), ("skill", "leaf")}
    assert found[("skill", "leaf")] == PackageVersions.from_versions_json(LEAF)  # from the cache
    assert [v.version for v in found[("role", "lead")].versions] == ["1.0.0", "1.1.0"]  # the new body won
    client.close()  # the cache writes under way are finished
    assert cached_etags(cache, ("role", "lead"), ("skill", "leaf")) == ['"lead-etag"', '"leaf-old"']


def test_unchanged_for_a_package_the_client_never_sent_is_not_invented(router, client) -> None:
    router.post(CLOSURE).respond(200, json=answer(LEAD, unchanged=("skill:leaf",)))
    found = client.closure([("role", "lead")])
    assert found is not None and set(found) == {("role", "lead")}  # leaf: asked for on its own by the caller


def test_missing_names_are_left_out_of_the_result(router, client) -> None:
    router.post(CLOSURE).respond(200, json=answer(LEAD, missing=("skill:leaf", "agent:ghost")))
    found = client.closure([("role", "lead")])
    assert found is not None and set(found) == {("role", "lead")}


def test_an_incomplete_answer_gives_what_it_holds(router, client) -> None:
    router.post(CLOSURE).respond(200, json=answer(LEAD, complete=False))
    found = client.closure([("role", "lead")])
    assert found is not None and set(found) == {("role", "lead")}  # the rest: per package, by the caller


def test_roots_past_the_limit_are_left_to_per_package_requests(router, client) -> None:
    route = router.post(CLOSURE).respond(200, json=answer())
    assert client.closure([("skill", f"s{i}") for i in range(150)]) == {}
    roots = sent(route)["roots"]
    assert len(roots) == 100 and roots[0] == {"kind": "skill", "slug": "s0"} and roots[-1]["slug"] == "s99"


def test_no_roots_or_offline_or_no_extensions_send_nothing(router, make_client, client) -> None:
    route = router.post(CLOSURE).respond(200, json=answer(LEAD))
    assert client.closure([]) is None
    offline = make_client(transport=httpx.MockTransport(router.handler), offline=True)
    assert offline.closure([("role", "lead")]) is None
    router.get("/api/v1/skills/leaf/versions").respond(405)
    router.get("/api/v1/skills/leaf").respond(200, json={"slug": "leaf", "latestVersion": None})
    client.package_versions("skill", "leaf")  # a v1-only registry: no extensions at all
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 0


def test_a_name_that_cannot_go_on_the_wire_is_a_value_error(router, client) -> None:
    route = router.post(CLOSURE).respond(200, json=answer())
    with pytest.raises(ValueError):
        client.closure([("skill", "../etc")])
    assert route.call_count == 0


# -- answers discarded whole ------------------------------------------------------------------------


def _twice() -> Any:
    return answer(LEAF, LEAF)


def _changed_and_unchanged() -> Any:
    return answer(LEAD, LEAF, unchanged=("skill:leaf",))


def _unchanged_twice() -> Any:
    return answer(LEAD, unchanged=("skill:leaf", "skill:leaf"))


def _over_the_bound() -> Any:
    return answer(LEAD, unchanged=tuple(f"skill:s{i}" for i in range(1000)))


def _bad_slug_in_a_document() -> Any:
    return answer(LEAD, doc("skill", "../escape", "1.0.0"))


def _bad_kind_in_a_document() -> Any:
    return answer(LEAD, doc("widget", "leaf", "1.0.0"))


def _bad_unchanged_id() -> Any:
    return answer(LEAD, unchanged=("leaf",))


def _bad_version_entry() -> Any:
    bad = doc("skill", "leaf", "1.0.0")
    bad["versions"][0]["sha256"] = "not-hex"
    return answer(LEAD, bad)


DISCARDED: dict[str, Callable[[], Any]] = {
    "a package listed twice": _twice,
    "a package both sent and unchanged": _changed_and_unchanged,
    "a package unchanged twice": _unchanged_twice,
    "more packages than MAX_CLOSURE": _over_the_bound,
    "an invalid slug": _bad_slug_in_a_document,
    "an unknown kind": _bad_kind_in_a_document,
    "an unchanged id without a kind": _bad_unchanged_id,
    "a malformed version entry": _bad_version_entry,
    "packages not a list": lambda: {"packages": {"role:lead": LEAD}, "unchanged": []},
    "unchanged not a list": lambda: answer(LEAD) | {"unchanged": "skill:leaf"},
    "a package not an object": lambda: {"packages": [{"versions": LEAD}, "x"], "unchanged": []},
    "a package without versions": lambda: {"packages": [{"etag": '"e"'}], "unchanged": []},
    "versions not a list": lambda: {"packages": [{"versions": LEAD | {"versions": "1.0.0"}}]},
    "no packages at all": lambda: {"unchanged": [], "complete": True},
    "a JSON array": lambda: [LEAD],
}


@pytest.mark.parametrize("make_body", DISCARDED.values(), ids=DISCARDED.keys())
def test_an_answer_that_cannot_be_trusted_whole_is_discarded(router, client, cache, make_body) -> None:
    route = router.post(CLOSURE).respond(200, json=make_body())
    assert client.closure([("role", "lead")]) is None  # the caller asks per package: never a partial result
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 2  # a bad answer is not an absent extension: the next call asks again
    client.close()  # no cache write is still under way
    assert cached_etags(cache, ("role", "lead"), ("skill", "leaf")) == [None, None]  # nothing of it kept


@pytest.mark.parametrize(
    "content",
    [b"<html>502 from a proxy</html>", b'{"packages": [', b"[" * 40 + b"]" * 40, b'{"packages": []}' + b"x"],
    ids=["html", "cut off", "nested too deep", "trailing bytes"],
)
def test_a_body_that_is_not_a_json_object_is_discarded(router, client, content) -> None:
    router.post(CLOSURE).respond(200, content=content, headers={"Content-Type": "application/json"})
    assert client.closure([("role", "lead")]) is None


def test_an_oversized_body_is_refused_while_it_streams(router, make_client, cache) -> None:
    body = json.dumps(answer(LEAD, LEAF)).encode()
    client = make_client(transport=httpx.MockTransport(router.handler), limits=SizeLimits(json=len(body) - 1))
    router.post(CLOSURE).respond(200, content=body, headers={"Content-Type": "application/json"})
    assert client.closure([("role", "lead")]) is None
    client.close()  # no cache write is still under way
    assert cached_etags(cache, ("role", "lead"), ("skill", "leaf")) == [None, None]


# -- a registry without the extension ---------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        httpx.Response(404, text="Not Found"),
        httpx.Response(404, json={"error": "no such route"}),
        httpx.Response(405, text="Method Not Allowed"),
        httpx.Response(501, json={"error": "not implemented"}),
    ],
    ids=["404 plain", "404 json", "405", "501"],
)
def test_an_absent_extension_is_remembered(router, client, sleeps, reply) -> None:
    closure = router.post(CLOSURE).mock(return_value=reply)
    versions = router.get("/api/v1/skills/leaf/versions").respond(200, json=LEAF)
    assert client.closure([("role", "lead")]) is None
    assert client.closure([("role", "lead")]) is None
    assert closure.call_count == 1  # the second call made no request
    assert sleeps == []
    # the other extension is not condemned with it
    assert client.package_versions("skill", "leaf").slug == "leaf"
    assert versions.call_count == 1


# -- the session's rules for a POST: 5xx, 429, transport errors -------------------------------------


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_server_error_that_may_have_taken_effect_is_not_retried(router, client, sleeps, status) -> None:
    route = router.post(CLOSURE).respond(status, json={"error": "boom"})
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 1 and sleeps == []
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 2  # a failing server is not an absent extension


def test_503_is_retried_with_backoff(router, client, sleeps) -> None:
    route = router.post(CLOSURE).mock(side_effect=[httpx.Response(503), httpx.Response(200, json=answer(LEAD))])
    found = client.closure([("role", "lead")])
    assert found is not None and set(found) == {("role", "lead")}
    assert route.call_count == 2
    assert len(sleeps) == 1 and 0.125 <= sleeps[0] <= 0.25
    assert sent(route, 0) == sent(route, 1)  # the same body again


def test_503_past_the_retries_falls_back(router, make_client, sleeps) -> None:
    route = router.post(CLOSURE).respond(503, json={"error": "busy"})
    client = make_client(transport=httpx.MockTransport(router.handler), retries=2)
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 3 and len(sleeps) == 2


def test_429_with_retry_after_is_waited_out(router, client, sleeps) -> None:
    limited = httpx.Response(429, json={"error": "slow down"}, headers={"Retry-After": "3"})
    route = router.post(CLOSURE).mock(side_effect=[limited, limited, httpx.Response(200, json=answer(LEAD))])
    told: list[str] = []
    client.on_rate_limit = told.append
    found = client.closure([("role", "lead")])
    assert found is not None and set(found) == {("role", "lead")}
    assert route.call_count == 3
    assert len(sleeps) == 2 and all(3.0 <= s <= 3.5 for s in sleeps)
    assert len(told) == 1 and "Retry-After 3 s" in told[0]


def test_429_past_the_wait_budget_falls_back_at_once(router, client, sleeps) -> None:
    route = router.post(CLOSURE).respond(429, json={"error": "slow down"}, headers={"Retry-After": "600"})
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 1 and sleeps == []


def test_429s_are_waited_out_only_up_to_the_bound(router, client, sleeps) -> None:
    route = router.post(CLOSURE).respond(429, headers={"Retry-After": "50"})
    assert client.closure([("role", "lead")]) is None
    assert route.call_count == 3 and sum(sleeps) <= 120  # a third wait would pass 120 s


def test_an_unreachable_registry_raises_after_the_retries(router, make_client, sleeps) -> None:
    route = router.post(CLOSURE).mock(side_effect=httpx.ConnectError("refused"))
    client = make_client(transport=httpx.MockTransport(router.handler), retries=2)
    with pytest.raises(RegistryUnreachable):
        client.closure([("role", "lead")])
    assert route.call_count == 3 and len(sleeps) == 2


def test_a_read_error_before_any_answer_is_not_retried(router, make_client, sleeps) -> None:
    route = router.post(CLOSURE).mock(side_effect=httpx.ReadError("reset"))
    client = make_client(transport=httpx.MockTransport(router.handler), retries=2)
    with pytest.raises(RegistryUnreachable):
        client.closure([("role", "lead")])
    assert route.call_count == 1 and sleeps == []  # the POST may have been taken: not sent again


class _CutOff(httpx.SyncByteStream):
    def __init__(self, data: bytes, error: type[httpx.TransportError]) -> None:
        self.data, self.error = data, error

    def __iter__(self) -> Iterator[bytes]:
        yield self.data[: len(self.data) // 2]
        raise self.error("peer closed connection without sending complete message body")


@pytest.mark.parametrize("error", [httpx.RemoteProtocolError, httpx.ReadError])
def test_an_answer_cut_off_midway_is_discarded_not_an_unreachable_registry(router, client, cache, sleeps,
                                                                          error) -> None:
    data = json.dumps(answer(LEAD, LEAF)).encode()
    route = router.post(CLOSURE).mock(side_effect=lambda request: httpx.Response(200, stream=_CutOff(data, error)))
    assert client.closure([("role", "lead")]) is None  # the provider asks per package (GETs are retried)
    assert route.call_count == 1 and sleeps == []
    client.close()  # no cache write is still under way
    assert cached_etags(cache, ("role", "lead"), ("skill", "leaf")) == [None, None]
