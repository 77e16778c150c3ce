"""The content-addressed cache: verified archives, atomic writes, per-registry metadata."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hub_client import Cache, IntegrityError

DATA = b"some archive bytes"
DIGEST = hashlib.sha256(DATA).hexdigest()
HUB = "http://hub.test"


def stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_put_then_get_archive_uses_the_bucketed_layout(cache: Cache) -> None:
    path = cache.put_archive(DATA, DIGEST, size=len(DATA))
    assert path == cache.root / "archives-v1" / DIGEST[:2] / DIGEST
    assert cache.get_archive(DIGEST) == path
    assert path.read_bytes() == DATA
    assert cache.read_archive(DIGEST) == DATA
    assert stored_files(cache.root) == [path]  # no temp files left behind


def test_uppercase_digest_finds_the_same_entry(cache: Cache) -> None:
    path = cache.put_archive(DATA, DIGEST.upper())
    assert cache.get_archive(DIGEST) == path


def test_missing_archive_is_a_miss(cache: Cache) -> None:
    assert cache.get_archive(DIGEST) is None
    assert cache.read_archive(DIGEST) is None


def test_put_with_wrong_hash_raises_and_stores_nothing(cache: Cache) -> None:
    wrong = "0" * 64
    with pytest.raises(IntegrityError) as info:
        cache.put_archive(DATA, wrong, what="archive of skill x 1.0.0")
    assert info.value.expected_sha256 == wrong
    assert info.value.actual_sha256 == DIGEST
    assert "archive of skill x 1.0.0" in str(info.value)
    assert cache.get_archive(wrong) is None
    assert stored_files(cache.root) == []


def test_put_with_wrong_size_raises_and_stores_nothing(cache: Cache) -> None:
    with pytest.raises(IntegrityError) as info:
        cache.put_archive(DATA, DIGEST, size=len(DATA) + 1)
    assert info.value.expected_size == len(DATA) + 1
    assert info.value.actual_size == len(DATA)
    assert "size mismatch" in str(info.value)
    assert stored_files(cache.root) == []


def test_stream_longer_than_promised_stops_reading(cache: Cache) -> None:
    pulled: list[int] = []

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(100):
            pulled.append(i)
            yield b"x" * 10

    with pytest.raises(IntegrityError):
        cache.put_archive_stream(chunks(), DIGEST, size=25)
    assert len(pulled) == 3
    assert stored_files(cache.root) == []


def test_error_from_the_stream_leaves_nothing(cache: Cache) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        yield b"half"
        raise OSError("connection dropped")

    with pytest.raises(OSError, match="dropped"):
        cache.put_archive_stream(chunks(), DIGEST)
    assert stored_files(cache.root) == []


@pytest.mark.parametrize("reader", ["get_archive", "read_archive"])
def test_corrupted_entry_is_deleted_and_reported_as_a_miss(cache: Cache, reader: str) -> None:
    path = cache.put_archive(DATA, DIGEST)
    path.write_bytes(b"bit rot")
    assert getattr(cache, reader)(DIGEST) is None
    assert not path.exists()


def test_bad_digest_is_refused(cache: Cache) -> None:
    with pytest.raises(ValueError):
        cache.archive_path("../../etc/passwd")


def test_metadata_round_trip_with_etag(cache: Cache) -> None:
    body = {"kind": "skill", "slug": "a", "versions": []}
    cache.put_metadata("http://hub.test", "skill", "a", body, etag='"e1"', source="versions")
    entry = cache.get_metadata("http://hub.test", "skills", "a")  # plural kinds map to the same entry
    assert entry is not None
    assert (entry.body, entry.etag, entry.source) == (body, '"e1"', "versions")
    (path,) = stored_files(cache.root)
    assert path.relative_to(cache.root).parts[0] == "metadata-v1"
    assert path.relative_to(cache.root).parts[2:] == ("skill", "a.json")


def test_metadata_is_kept_apart_per_registry(cache: Cache) -> None:
    cache.put_metadata("http://one.test", "skill", "a", {"n": 1}, etag=None, source="versions")
    cache.put_metadata("http://two.test", "skill", "a", {"n": 2}, etag=None, source="versions")
    one = cache.get_metadata("http://one.test/", "skill", "a")
    two = cache.get_metadata("http://two.test", "skill", "a")
    assert one is not None and one.body == {"n": 1}
    assert two is not None and two.body == {"n": 2}
    assert cache.get_metadata("http://three.test", "skill", "a") is None


def test_unreadable_metadata_is_a_miss_and_removed(cache: Cache) -> None:
    cache.put_metadata("http://hub.test", "role", "r", {}, etag=None, source="versions")
    (path,) = stored_files(cache.root)
    path.write_text("{not json")
    assert cache.get_metadata("http://hub.test", "role", "r") is None
    assert not path.exists()


def test_metadata_refuses_a_slug_that_would_escape(cache: Cache) -> None:
    with pytest.raises(ValueError):
        cache.put_metadata("http://hub.test", "role", "../x", {}, etag=None, source="versions")


def test_an_archive_put_behind_is_a_hit_before_its_file_is_written(cache: Cache) -> None:
    path = cache.put_archive_behind(DATA, DIGEST, size=len(DATA), what="archive")
    assert not path.exists()  # written by write_pending, on whatever thread the caller gives it
    assert cache.read_archive(DIGEST) == DATA and cache.get_archive(DIGEST) == path
    cache.write_pending()
    assert path.read_bytes() == DATA
    assert stored_files(cache.root) == [path]
    cache.write_pending()  # nothing left to write
    assert stored_files(cache.root) == [path]


def test_an_archive_put_behind_is_checked_first(cache: Cache) -> None:
    with pytest.raises(IntegrityError):
        cache.put_archive_behind(DATA + b"!", DIGEST, size=None, what="archive")
    with pytest.raises(IntegrityError):
        cache.put_archive_behind(DATA, DIGEST, size=len(DATA) + 1, what="archive")
    cache.write_pending()
    assert cache.read_archive(DIGEST) is None and stored_files(cache.root) == []


def test_past_the_memory_bound_an_archive_is_written_at_once(cache: Cache) -> None:
    from hub_client import CacheLimits

    cache = Cache(cache.root, limits=CacheLimits(recent=len(DATA) - 1))
    path = cache.put_archive_behind(DATA, DIGEST, size=len(DATA), what="archive")
    assert path.read_bytes() == DATA


def test_many_metadata_answers_go_to_one_pack_file(cache: Cache) -> None:
    entries = [("skill", f"s{i}", {"n": i}, f'"e{i}"', "versions") for i in range(50)]
    cache.put_metadata_many(HUB, entries)
    (pack,) = stored_files(cache.root)
    assert pack.name == "closure-pack.json"
    fresh = Cache(cache.root)  # another process: reads the pack from disk
    for i in (0, 49):
        entry = fresh.get_metadata(HUB, "skills", f"s{i}")
        assert entry is not None and (entry.body, entry.etag, entry.source) == ({"n": i}, f'"e{i}"', "versions")
    assert fresh.get_metadata(HUB, "skill", "s50") is None
    assert fresh.get_metadata(HUB, "role", "s0") is None  # kinds stay apart
    assert fresh.get_metadata("http://other.test", "skill", "s0") is None


def test_the_newest_answer_wins_between_a_package_file_and_the_pack(cache: Cache) -> None:
    cache.put_metadata(HUB, "skill", "a", {"n": "file, older"}, etag='"old"', source="versions")
    cache.put_metadata_many(HUB, [("skill", "a", {"n": "pack, newer"}, '"new"', "versions")])
    entry = cache.get_metadata(HUB, "skill", "a")
    assert entry is not None and entry.etag == '"new"'  # the pack removed the older file
    cache.put_metadata(HUB, "skill", "a", {"n": "file, newest"}, etag='"newest"', source="versions")
    entry = Cache(cache.root).get_metadata(HUB, "skill", "a")
    assert entry is not None and entry.etag == '"newest"'
    cache.put_metadata_many(HUB, [("skill", "b", {}, None, "versions")])  # merged: a's pack entry stays
    assert Cache(cache.root).get_metadata(HUB, "skill", "b") is not None


def test_a_pack_past_its_bound_drops_its_oldest_entries(cache: Cache) -> None:
    from hub_client import CacheLimits

    cache = Cache(cache.root, limits=CacheLimits(metadata_pack=4000))
    for batch in range(5):
        cache.put_metadata_many(HUB, [("skill", f"b{batch}-{i}", {"pad": "x" * 100}, None, "versions")
                                      for i in range(8)])
    fresh = Cache(cache.root)
    assert all(fresh.get_metadata(HUB, "skill", f"b4-{i}") is not None for i in range(8))  # the newest stay whole
    assert fresh.get_metadata(HUB, "skill", "b0-0") is None
    assert stored_files(cache.root)[0].stat().st_size <= 4000


def test_an_unreadable_pack_is_a_miss(cache: Cache) -> None:
    cache.put_metadata_many(HUB, [("skill", "a", {}, None, "versions")])
    (pack,) = stored_files(cache.root)
    pack.write_text('{"skill:a": ["not", "an", "entry"], "skill:b": {"body": {}, "source": "versions"}}')
    fresh = Cache(cache.root)
    assert fresh.get_metadata(HUB, "skill", "a") is None
    entry = fresh.get_metadata(HUB, "skill", "b")
    assert entry is not None and entry.etag is None
    pack.write_text("{not json")
    assert Cache(cache.root).get_metadata(HUB, "skill", "b") is None and not pack.exists()
