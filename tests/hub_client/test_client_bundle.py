"""fetch_archive_bundle(): `POST /archives` from the client's side, against a respx router: the answer split
into archives, each checked against the sha256 and size the client holds (never the index's), what is wrong
or absent left out for a single fetch, and a registry without the extension remembered."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from hub_client import Cache, RegistryUnreachable

BASE = "http://hub.test"
BUNDLE = "/api/v1/archives"

DATA = {
    "alpha": b"\x1f\x8b alpha archive bytes",
    "beta": b"\x1f\x8b beta archive, a little longer than alpha",
    "gamma": b"\x1f\x8b gamma",
}


def item(slug: str, kind: str = "skill") -> tuple[str, str, str, str, int]:
    data = DATA[slug]
    return (kind, slug, "1.0.0", hashlib.sha256(data).hexdigest(), len(data))


ALPHA, BETA, GAMMA = item("alpha"), item("beta"), item("gamma")


def bundle(*members: tuple[str, bytes], index: list[dict[str, Any]] | None = None) -> bytes:
    """The wire shape of registry_server/bundle.py: one line of JSON index, then the bytes back to back."""
    if index is None:
        index = [{"kind": "skill", "slug": slug, "version": "1.0.0", "sha256": hashlib.sha256(data).hexdigest(),
                  "size": len(data)} for slug, data in members]
    return json.dumps(index, separators=(",", ":")).encode() + b"\n" + b"".join(data for _, data in members)


def good(*slugs: str) -> list[tuple[str, bytes]]:
    return [(slug, DATA[slug]) for slug in slugs]


def reply(content: bytes) -> httpx.Response:
    return httpx.Response(200, content=content, headers={"Content-Type": "application/octet-stream"})


def stored_digests(cache: Cache) -> set[str]:
    bucket = cache.root / "archives-v1"
    return {p.name for p in bucket.rglob("*") if p.is_file()} if bucket.exists() else set()


def assert_verified(got: set[Any], cache: Cache) -> None:
    for _, slug, _, sha256, size in got:
        data = Cache(cache.root).read_archive(sha256)  # from the files, as another process reads them
        assert data == DATA[slug] and hashlib.sha256(data).hexdigest() == sha256 and len(data) == size


def test_a_good_answer_is_split_and_every_archive_verified_and_cached(router, client, cache) -> None:
    route = router.post(BUNDLE).mock(return_value=reply(bundle(*good("alpha", "beta", "gamma"))))
    got = client.fetch_archive_bundle([ALPHA, BETA, GAMMA])
    assert set(got) == {ALPHA, BETA, GAMMA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert_verified(got, cache)
    assert all(cache.archive_path(i[3]).is_file() for i in got)  # a few archives: a file each
    request = route.calls[0].request
    assert json.loads(request.content) == {"items": [{"kind": "skill", "slug": s, "version": "1.0.0"}
                                                     for s in ("alpha", "beta", "gamma")]}
    assert request.headers["Accept"] == "application/octet-stream"
    assert request.headers["Accept-Encoding"] == "identity"


def test_cached_archives_are_not_asked_for(router, client, cache) -> None:
    cache.put_archive(DATA["alpha"], ALPHA[3])
    route = router.post(BUNDLE).mock(return_value=reply(bundle(*good("beta"))))
    got = client.fetch_archive_bundle([ALPHA, BETA])
    assert set(got) == {ALPHA, BETA}
    assert [i["slug"] for i in json.loads(route.calls[0].request.content)["items"]] == ["beta"]
    assert client.fetch_archive_bundle([ALPHA, BETA]) == got
    assert route.call_count == 1  # everything cached: no request at all


def test_plural_kinds_are_sent_singular_and_matched(router, client) -> None:
    plural = ("skills", *ALPHA[1:])
    route = router.post(BUNDLE).mock(return_value=reply(bundle(*good("alpha"))))
    assert set(client.fetch_archive_bundle([plural])) == {plural}
    assert json.loads(route.calls[0].request.content)["items"][0]["kind"] == "skill"


def test_a_wrong_member_is_left_out_and_the_others_kept(router, client, cache) -> None:
    tampered = bytes([DATA["beta"][0] ^ 1]) + DATA["beta"][1:]  # same size, other bytes
    router.post(BUNDLE).mock(return_value=reply(bundle(("alpha", DATA["alpha"]), ("beta", tampered),
                                                       ("gamma", DATA["gamma"]))))
    got = client.fetch_archive_bundle([ALPHA, BETA, GAMMA])
    assert set(got) == {ALPHA, GAMMA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert_verified(got, cache)
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == {ALPHA[3], GAMMA[3]}  # nothing stored under beta's digest


def test_the_index_sha256_is_never_trusted(router, client, cache) -> None:
    # the index vouches for a tampered alpha with the tampered bytes' own digest: the client's sha256 decides
    tampered = b"\x1f\x8b alpha archive BYTES"
    index = [{"kind": "skill", "slug": "alpha", "version": "1.0.0", "sha256": hashlib.sha256(tampered).hexdigest(),
              "size": len(tampered)}]
    router.post(BUNDLE).mock(return_value=reply(bundle(("alpha", tampered), index=index)))
    assert client.fetch_archive_bundle([ALPHA]) == set()
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == set()


def test_a_member_of_the_wrong_size_is_left_out(router, client, cache) -> None:
    shorter = ("skill", "alpha", "1.0.0", ALPHA[3], ALPHA[4] + 1)  # the client expects one byte more
    router.post(BUNDLE).mock(return_value=reply(bundle(*good("alpha", "beta"))))
    got = client.fetch_archive_bundle([shorter, BETA])
    assert set(got) == {BETA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == {BETA[3]}


def test_a_missing_member_is_left_out(router, client, cache) -> None:
    router.post(BUNDLE).mock(return_value=reply(bundle(*good("alpha", "gamma"))))
    got = client.fetch_archive_bundle([ALPHA, BETA, GAMMA])
    assert set(got) == {ALPHA, GAMMA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert_verified(got, cache)


def test_members_not_asked_for_are_ignored(router, client, cache) -> None:
    router.post(BUNDLE).mock(return_value=reply(bundle(*good("beta", "alpha"))))
    got = client.fetch_archive_bundle([ALPHA])
    assert set(got) == {ALPHA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == {ALPHA[3]}


def test_a_truncated_body_keeps_what_arrived_whole(router, client, cache) -> None:
    body = bundle(*good("alpha", "beta", "gamma"))
    router.post(BUNDLE).mock(return_value=reply(body[:-3]))  # gamma cut short
    got = client.fetch_archive_bundle([ALPHA, BETA, GAMMA])
    assert set(got) == {ALPHA, BETA}
    client.settle_writes()  # the archives' files are written behind the caller
    assert_verified(got, cache)
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == {ALPHA[3], BETA[3]}


def test_an_index_that_disagrees_with_the_bytes_stores_nothing_wrong(router, client, cache) -> None:
    members = good("alpha", "beta", "gamma")
    index = json.loads(bundle(*members).partition(b"\n")[0])
    index[0]["size"] -= 2  # alpha's bytes run into beta's: every offset after it is wrong
    router.post(BUNDLE).mock(return_value=reply(bundle(*members, index=index)))
    got = client.fetch_archive_bundle([ALPHA, BETA, GAMMA])
    client.settle_writes()  # the archives' files are written behind the caller
    assert_verified(got, cache)
    assert ALPHA not in got and BETA not in got
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == {i[3] for i in got}


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"no index line at all",
        b"{\"kind\": \"skill\"}\n" + DATA["alpha"],
        b"[\"alpha\"]\n" + DATA["alpha"],
        b"[{\"kind\":\"skill\",\"slug\":\"alpha\",\"version\":\"1.0.0\",\"size\":-1}]\n" + DATA["alpha"],
        b"[{\"kind\":\"skill\",\"slug\":\"alpha\",\"version\":\"1.0.0\",\"size\":\"22\"}]\n" + DATA["alpha"],
        b"[" * 40 + b"]" * 40 + b"\n",
    ],
    ids=["empty", "no index", "index not a list", "entry not an object", "negative size", "size a string",
         "nested too deep"],
)
def test_a_corrupt_answer_stores_nothing_and_raises_nothing(router, client, cache, content) -> None:
    route = router.post(BUNDLE).mock(return_value=reply(content))
    assert client.fetch_archive_bundle([ALPHA]) == set()
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == set()
    client.fetch_archive_bundle([ALPHA])
    assert route.call_count == 2  # a bad answer is not an absent extension


@pytest.mark.parametrize(
    "reply_",
    [httpx.Response(404, text="Not Found"), httpx.Response(405), httpx.Response(501, json={"error": "no"})],
    ids=["404", "405", "501"],
)
def test_an_absent_extension_is_remembered(router, client, reply_) -> None:
    route = router.post(BUNDLE).mock(return_value=reply_)
    assert client.fetch_archive_bundle([ALPHA, BETA]) == set()
    assert client.fetch_archive_bundle([ALPHA, BETA]) == set()
    assert route.call_count == 1


def test_a_server_error_falls_back_without_being_remembered(router, client, sleeps) -> None:
    route = router.post(BUNDLE).mock(side_effect=[httpx.Response(500, json={"error": "boom"}),
                                                  reply(bundle(*good("alpha")))])
    assert client.fetch_archive_bundle([ALPHA]) == set()
    assert route.call_count == 1 and sleeps == []  # a POST that may have taken effect is not retried
    assert set(client.fetch_archive_bundle([ALPHA])) == {ALPHA}


def test_429_is_waited_out(router, client, sleeps) -> None:
    limited = httpx.Response(429, headers={"Retry-After": "1"})
    route = router.post(BUNDLE).mock(side_effect=[limited, reply(bundle(*good("alpha")))])
    assert set(client.fetch_archive_bundle([ALPHA])) == {ALPHA}
    assert route.call_count == 2 and len(sleeps) == 1 and 1.0 <= sleeps[0] <= 1.5


def test_offline_gives_only_the_cache(router, make_client, cache) -> None:
    cache.put_archive(DATA["alpha"], ALPHA[3])
    route = router.post(BUNDLE).mock(return_value=reply(bundle(*good("beta"))))
    offline = make_client(transport=httpx.MockTransport(router.handler), offline=True)
    assert set(offline.fetch_archive_bundle([ALPHA, BETA])) == {ALPHA}
    assert route.call_count == 0


class _CutOff(httpx.SyncByteStream):
    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self.data[:-3]
        raise httpx.ReadError("connection reset by peer")


def test_an_answer_cut_off_midway_is_discarded_not_an_unreachable_registry(router, client, cache, sleeps) -> None:
    data = bundle(*good("alpha", "beta"))
    route = router.post(BUNDLE).mock(side_effect=lambda request: httpx.Response(200, stream=_CutOff(data)))
    assert client.fetch_archive_bundle([ALPHA, BETA]) == set()  # the caller fetches each alone (GETs are retried)
    assert route.call_count == 1 and sleeps == []  # never sent twice: each archive sent counts a download
    client.settle_writes()  # the archives' files are written behind the caller
    assert stored_digests(cache) == set()


def test_an_unreachable_registry_raises(router, make_client) -> None:
    router.post(BUNDLE).mock(side_effect=httpx.ConnectError("refused"))
    client = make_client(transport=httpx.MockTransport(router.handler), retries=1)
    with pytest.raises(RegistryUnreachable):
        client.fetch_archive_bundle([ALPHA])


def test_a_bundle_needs_a_cache(make_client) -> None:
    with pytest.raises(ValueError, match="cache"):
        make_client(cache=None).fetch_archive_bundle([ALPHA])
