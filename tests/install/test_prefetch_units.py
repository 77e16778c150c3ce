"""The install's use of the two extensions, with HubClient over a respx router (no server): the provider's
prefetch falls back closure → per-package `versions` → v1 detail, and the speculator fetches one by one
exactly the archives a bundle did not bring whole."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from hub_client import Cache, HubClient, VersionInfo
from strawpot.install.background import Speculator
from strawpot.install.provider import HubProvider

BASE = "http://hub.test"
CLOSURE = "/api/v1/closure"
BUNDLE = "/api/v1/archives"


def versions(kind: str, slug: str, deps: dict[str, list[str]]) -> dict[str, Any]:
    entry = {"version": "1.0.0", "dependencies": deps, "sha256": "a" * 64, "size": 1, "files": [], "yanked": False}
    return {"kind": kind, "slug": slug, "versions": [entry]}


def detail(slug: str, deps: dict[str, list[str]]) -> dict[str, Any]:
    return {"slug": slug, "latestVersion": {"version": "1.0.0", "dependencies": deps, "files": []}}


# role lead -> skill leaf -> skill twig
DEPS = {("role", "lead"): {"skills": ["leaf^1.0"], "roles": []}, ("skill", "leaf"): {"skills": ["twig"]},
        ("skill", "twig"): {}}
PIDS = ["role:lead", "skill:leaf", "skill:twig"]
VERSIONS = {key: f"/api/v1/{key[0]}s/{key[1]}/versions" for key in DEPS}
DETAIL = {key: f"/api/v1/{key[0]}s/{key[1]}" for key in DEPS}


def closure_answer(*keys: tuple[str, str], complete: bool = True) -> dict[str, Any]:
    return {"packages": [{"etag": f'"{k[1]}"', "versions": versions(*k, DEPS[k])} for k in keys],
            "unchanged": [], "missing": [], "complete": complete, "limit": 1000}


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def router(slept: list[float]) -> respx.MockRouter:
    """Unknown routes fail the test (assert_all_mocked): a request the fallback should not make is an error."""
    return respx.MockRouter(base_url=BASE, assert_all_called=False)


@pytest.fixture
def client(router: respx.MockRouter, tmp_path, slept: list[float]) -> Any:
    made = HubClient(BASE, transport=httpx.MockTransport(router.handler), cache=Cache(tmp_path / "cache"),
                     sleep=slept.append)
    yield made
    made.close()


def serve_versions(router: respx.MockRouter) -> dict[tuple[str, str], respx.Route]:
    return {key: router.get(path).respond(200, json=versions(*key, DEPS[key])) for key, path in VERSIONS.items()}


def all_known(provider: HubProvider) -> None:
    for pid in PIDS:
        found = provider._known[pid]
        assert not isinstance(found, Exception), found
        assert [v.version for v in found.versions] == ["1.0.0"]


def test_one_closure_request_answers_the_whole_graph(router, client, slept) -> None:
    closure = router.post(CLOSURE).respond(200, json=closure_answer(*DEPS))
    per_package = serve_versions(router)
    provider = HubProvider(client)
    provider.prefetch(["role:lead"])
    all_known(provider)
    assert closure.call_count == 1 and all(r.call_count == 0 for r in per_package.values())
    assert json.loads(closure.calls[0].request.content)["roots"] == [{"kind": "role", "slug": "lead"}]
    assert provider.has_archives("skill:twig") and slept == []


def test_each_likely_version_is_worked_out_once_however_often_the_graph_is_walked(router, client) -> None:
    router.post(CLOSURE).respond(200, json=closure_answer(*DEPS))
    provider = HubProvider(client, speculate=lambda batch: told.append(sorted((k, s) for k, s, _ in batch)))
    told: list[list[tuple[str, str]]] = []
    worked_out: list[str] = []
    likely = provider._likely
    provider._likely = lambda pid, found: worked_out.append(pid) or likely(pid, found)  # type: ignore[method-assign]
    for _ in range(3):  # the solver prefetches again at every level of the graph
        provider.prefetch(["role:lead"])
    assert sorted(worked_out) == sorted(PIDS)
    assert told and all(batch == [("role", "lead"), ("skill", "leaf"), ("skill", "twig")] for batch in told)


def test_what_an_incomplete_closure_left_out_is_asked_for_on_its_own(router, client) -> None:
    router.post(CLOSURE).respond(200, json=closure_answer(("role", "lead"), ("skill", "leaf"), complete=False))
    per_package = serve_versions(router)
    provider = HubProvider(client)
    provider.prefetch(["role:lead"])
    all_known(provider)
    assert [per_package[k].call_count for k in DEPS] == [0, 0, 1]


def test_a_closure_answer_discarded_whole_falls_back_to_versions(router, client) -> None:
    twice = closure_answer(("role", "lead"), ("skill", "leaf"), ("skill", "leaf"), ("skill", "twig"))
    closure = router.post(CLOSURE).respond(200, json=twice)
    per_package = serve_versions(router)
    provider = HubProvider(client)
    provider.prefetch(["role:lead"])
    all_known(provider)
    assert closure.call_count == 1 and [per_package[k].call_count for k in DEPS] == [1, 1, 1]


def test_a_registry_without_closure_is_asked_per_package_and_not_asked_again(router, client) -> None:
    closure = router.post(CLOSURE).respond(501, json={"error": "not implemented"})
    per_package = serve_versions(router)
    HubProvider(client).prefetch(["role:lead"])
    second = HubProvider(client)  # a second resolution with the same client
    second.prefetch(["role:lead"])
    all_known(second)
    assert closure.call_count == 1
    assert [per_package[k].call_count for k in DEPS] == [2, 2, 2]


def test_a_v1_only_registry_gets_closure_then_versions_then_the_v1_detail(router, client) -> None:
    router.post(CLOSURE).respond(404, text="Not Found")
    router.get(VERSIONS[("role", "lead")]).respond(404, text="Not Found")  # not JSON: no such route
    for key, path in DETAIL.items():
        router.get(path).respond(200, json=detail(key[1], DEPS[key]))
    provider = HubProvider(client)
    provider.prefetch(["role:lead"])
    all_known(provider)
    assert not provider.has_archives("skill:twig")
    assert [f"{c.request.method} {c.request.url.path}" for c in router.calls] == [
        f"POST {CLOSURE}",
        f"GET {VERSIONS[('role', 'lead')]}",
        f"GET {DETAIL[('role', 'lead')]}",
        f"GET {DETAIL[('skill', 'leaf')]}",  # the registry has no extensions: no more versions requests
        f"GET {DETAIL[('skill', 'twig')]}",
    ]


# -- the speculator: a bundle first, then one by one only what it did not bring whole ------------------------

DATA = {"alpha": b"alpha archive", "beta": b"beta archive", "gamma": b"gamma archive", "delta": b"delta archive"}


def info(slug: str) -> VersionInfo:
    return VersionInfo(version="1.0.0", sha256=hashlib.sha256(DATA[slug]).hexdigest(), size=len(DATA[slug]))


def bundle(*members: tuple[str, bytes]) -> bytes:
    index = [{"kind": "skill", "slug": s, "version": "1.0.0", "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
             for s, d in members]
    return json.dumps(index).encode() + b"\n" + b"".join(d for _, d in members)


def serve_archives(router: respx.MockRouter) -> dict[str, respx.Route]:
    return {slug: router.get(f"/api/v1/skills/{slug}/versions/1.0.0/archive").respond(200, content=data)
            for slug, data in DATA.items()}


def test_only_what_the_bundle_did_not_bring_whole_is_fetched_alone(router, client) -> None:
    # alpha arrives whole, beta is tampered with, gamma is left out
    body = bundle(("alpha", DATA["alpha"]), ("beta", b"BETA archive"))
    router.post(BUNDLE).respond(200, content=body)
    single = serve_archives(router)
    speculator = Speculator(client, lambda kind, name, version: True)
    speculator([("skill", slug, info(slug)) for slug in ("alpha", "beta", "gamma")])
    speculator.settle(timeout=30)
    assert {slug: route.call_count for slug, route in single.items()} == {"alpha": 0, "beta": 1, "gamma": 1,
                                                                          "delta": 0}
    for slug, data in list(DATA.items())[:3]:
        assert client.cache.read_archive(info(slug).sha256) == data


def test_without_bundles_every_archive_is_fetched_alone_and_the_bundle_not_asked_again(router, client) -> None:
    bundles = router.post(BUNDLE).respond(501, json={"error": "not implemented"})
    single = serve_archives(router)
    speculator = Speculator(client, lambda kind, name, version: True)
    speculator([("skill", "alpha", info("alpha")), ("skill", "beta", info("beta"))])
    speculator.settle(timeout=30)
    # a second batch of two new ones (alpha: seen already) would be a bundle, but the registry has none
    speculator([("skill", "gamma", info("gamma")), ("skill", "delta", info("delta")), ("skill", "alpha", info("alpha"))])
    speculator.settle(timeout=30)
    assert bundles.call_count == 1
    assert {slug: route.call_count for slug, route in single.items()} == {"alpha": 1, "beta": 1, "gamma": 1,
                                                                          "delta": 1}


class _CutOff(httpx.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield b'[{"kind":"skill","slug":"alpha"'
        raise httpx.ReadError("connection reset by peer")


def test_a_bundle_cut_off_midway_leaves_every_archive_to_a_single_fetch(router, client) -> None:
    router.post(BUNDLE).mock(side_effect=lambda request: httpx.Response(200, stream=_CutOff()))
    single = serve_archives(router)
    speculator = Speculator(client, lambda kind, name, version: True)
    speculator([("skill", slug, info(slug)) for slug in ("alpha", "beta")])
    speculator.settle(timeout=30)
    assert {slug: route.call_count for slug, route in single.items()} == {"alpha": 1, "beta": 1, "gamma": 0,
                                                                          "delta": 0}


def test_a_closure_cut_off_midway_falls_back_to_versions(router, client) -> None:
    class Cut(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield json.dumps(closure_answer(*DEPS)).encode()[:100]
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    router.post(CLOSURE).mock(side_effect=lambda request: httpx.Response(200, stream=Cut()))
    per_package = serve_versions(router)
    provider = HubProvider(client)
    provider.prefetch(["role:lead"])  # before the fix: RegistryUnreachable, the install ended with exit 6
    all_known(provider)
    assert [per_package[k].call_count for k in DEPS] == [1, 1, 1]


PROOFS = "/api/v1/log/proofs"


def test_the_provenance_requests_go_with_the_first_batch_and_serve_when_they_cover_the_lock(router, client) -> None:
    from strawpot.install.provenance import _proofs

    answer = {"head": {"size": 9}, "size": 9, "entries": [{"index": 3}, {"index": 5}]}
    proofs = router.post(PROOFS).respond(200, json=answer)
    speculator = Speculator(client, lambda kind, name, version: False)  # no archive wanted: only the proofs
    infos = [VersionInfo("1.0.0", log_index=5), VersionInfo("1.0.0", log_index=3), VersionInfo("2.0.0"),
             VersionInfo("1.0.0", log_index=7, log="https://upstream.test")]  # a mirror's upstream: asked apart
    speculator([("skill", f"s{i}", info) for i, info in enumerate(infos)])
    speculator([("skill", "later", VersionInfo("1.0.0", log_index=8))])  # one early request, with the first batch
    ahead = speculator.ahead
    assert ahead is not None and ahead.indexes == {3, 5} and ahead.keys == {}
    assert ahead.proofs is not None and ahead.proofs.result() == answer
    assert json.loads(proofs.calls[0].request.content) == {"indexes": [3, 5]} and proofs.call_count == 1

    assert _proofs(client, BASE, [3, 5], None, ahead) == answer and proofs.call_count == 1  # served, not asked again
    assert _proofs(client, BASE, [5], None, ahead) == answer and proofs.call_count == 1
    _proofs(client, BASE, [3, 8], None, ahead)  # a version the early request did not name: asked for all
    assert proofs.call_count == 2 and json.loads(proofs.calls[1].request.content) == {"indexes": [3, 8]}


def test_an_early_provenance_request_that_failed_is_made_again(router, client) -> None:
    from strawpot.install.provenance import _proofs

    proofs = router.post(PROOFS).mock(side_effect=[httpx.Response(400, json={"error": "index 4 is not in the log"}),
                                                   httpx.Response(200, json={"size": 9, "entries": []})])
    speculator = Speculator(client, lambda kind, name, version: False)
    speculator([("skill", "a", VersionInfo("1.0.0", log_index=3)), ("skill", "b", VersionInfo("1.0.0", log_index=4))])
    assert _proofs(client, BASE, [3], None, speculator.ahead) == {"size": 9, "entries": []}
    assert proofs.call_count == 2 and json.loads(proofs.calls[1].request.content) == {"indexes": [3]}
