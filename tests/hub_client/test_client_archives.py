"""Archives: verified downloads into the cache, integrity failures, corrupted entries, concurrency."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hub_client import Cache, IntegrityError, NotFound, OfflineMiss, RegistryUnreachable

ARCHIVE = b"\x1f\x8b pretend this is a deterministic tar.gz"
DIGEST = hashlib.sha256(ARCHIVE).hexdigest()
URL = "/api/v1/skills/git-workflow/versions/1.2.0/archive"


def archive_reply(data: bytes = ARCHIVE) -> httpx.Response:
    return httpx.Response(200, content=data, headers={"Content-Type": "application/gzip"})


def archive_files(cache: Cache) -> list[Path]:
    bucket = cache.root / "archives-v1"
    return sorted(p for p in bucket.rglob("*") if p.is_file()) if bucket.exists() else []


def test_fetch_stores_verified_bytes_and_hits_the_cache_next_time(registry, make_client, cache) -> None:
    registry.on("GET", URL, archive_reply())
    client = make_client()
    path = client.fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert path == cache.archive_path(DIGEST)
    assert path.read_bytes() == ARCHIVE
    assert client.fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE)) == path
    assert registry.count("GET", URL) == 1
    assert registry.requests[0].headers["Accept"] == "application/gzip"


def test_hash_mismatch_is_refused_and_nothing_is_cached(registry, make_client, cache) -> None:
    registry.on("GET", URL, archive_reply(b"tampered bytes of the same promise"))
    with pytest.raises(IntegrityError) as info:
        make_client().fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, None)
    assert info.value.expected_sha256 == DIGEST
    assert info.value.actual_sha256 == hashlib.sha256(b"tampered bytes of the same promise").hexdigest()
    assert info.value.url == "http://hub.test" + URL
    assert "skill git-workflow 1.2.0" in str(info.value)
    assert archive_files(cache) == []
    assert registry.count("GET", URL) == 1  # an integrity failure is not retried


def test_size_mismatch_is_refused_and_nothing_is_cached(registry, make_client, cache) -> None:
    registry.on("GET", URL, archive_reply())
    with pytest.raises(IntegrityError, match="size mismatch"):
        make_client().fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE) - 1)
    assert archive_files(cache) == []


def test_corrupted_cache_entry_is_never_returned(registry, make_client, cache) -> None:
    cache.put_archive(ARCHIVE, DIGEST).write_bytes(b"flipped bits")
    registry.on("GET", URL, archive_reply())
    path = make_client().fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert path.read_bytes() == ARCHIVE
    assert registry.count("GET", URL) == 1  # downloaded again instead of using the bad entry


def test_corrupted_entry_offline_is_a_miss(registry, make_client, cache) -> None:
    cache.put_archive(ARCHIVE, DIGEST).write_bytes(b"flipped bits")
    with pytest.raises(OfflineMiss):
        make_client(offline=True).fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert registry.requests == []


def test_offline_hit_needs_no_network(registry, make_client, cache) -> None:
    cache.put_archive(ARCHIVE, DIGEST)
    path = make_client(offline=True).fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert path.read_bytes() == ARCHIVE
    assert registry.requests == []


class _DroppingStream(httpx.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield ARCHIVE[:5]
        raise httpx.ReadError("connection reset mid-body")


def test_a_body_cut_off_mid_stream_is_retried(registry, make_client, cache) -> None:
    registry.on("GET", URL, httpx.Response(200, stream=_DroppingStream()), archive_reply())
    path = make_client().fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert path.read_bytes() == ARCHIVE
    assert registry.count("GET", URL) == 2
    assert archive_files(cache) == [path]  # the partial attempt left no temp file


def test_a_body_always_cut_off_is_unreachable_and_stores_nothing(registry, make_client, cache) -> None:
    registry.on("GET", URL, lambda request: httpx.Response(200, stream=_DroppingStream()))
    with pytest.raises(RegistryUnreachable):
        make_client(retries=1).fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    assert archive_files(cache) == []
    assert registry.count("GET", URL) == 2


def test_fetch_archive_needs_a_cache(make_client) -> None:
    with pytest.raises(ValueError, match="cache"):
        make_client(cache=None).fetch_archive("skill", "git-workflow", "1.2.0", DIGEST, 1)


def test_fetch_archives_concurrently_keyed_by_item_with_errors_per_item(registry, make_client) -> None:
    other = b"another archive"
    barrier = threading.Barrier(3, timeout=60)

    def concurrent(response: httpx.Response):  # type: ignore[no-untyped-def]
        def reply(request: httpx.Request) -> httpx.Response:
            barrier.wait()  # fails unless three downloads are in flight together
            return response

        return reply

    registry.on("GET", URL, concurrent(archive_reply()))
    registry.on("GET", "/api/v1/skills/other/versions/0.1.0/archive", concurrent(archive_reply(other)))
    registry.on(
        "GET",
        "/api/v1/roles/gone/versions/1.0.0/archive",
        concurrent(httpx.Response(404, json={"error": "no such version"})),
    )
    good = ("skill", "git-workflow", "1.2.0", DIGEST, len(ARCHIVE))
    second = ("skill", "other", "0.1.0", hashlib.sha256(other).hexdigest(), len(other))
    missing = ("role", "gone", "1.0.0", "f" * 64, 10)
    seen: list[tuple[object, object]] = []
    results = make_client().fetch_archives([good, second, missing], progress=lambda k, r: seen.append((k, r)))
    assert list(results) == [good, second, missing]
    assert isinstance(results[good], Path) and results[good].read_bytes() == ARCHIVE
    assert isinstance(results[second], Path) and results[second].read_bytes() == other
    assert isinstance(results[missing], NotFound)
    assert sorted(map(repr, seen)) == sorted(repr((k, v)) for k, v in results.items())
