"""Archive packs: the archives of one bundled download stored as one file, read back verified by any process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from hub_client import Cache
from hub_client._archive_packs import MAX_ENTRIES
from hub_client._cache import _ARCHIVE_PACK_MIN

ARCHIVES = [f"archive {i} ".encode() * (i + 1) for i in range(_ARCHIVE_PACK_MIN + 2)]
DIGESTS = [hashlib.sha256(data).hexdigest() for data in ARCHIVES]


def stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def put_all(cache: Cache, archives: list[bytes] = ARCHIVES) -> None:
    for data in archives:
        cache.put_archive_behind(data, hashlib.sha256(data).hexdigest(), size=len(data), what="archive")
    cache.write_pending()


def the_pack(cache: Cache) -> Path:
    (pack,) = stored_files(cache.root)
    assert pack.parent == cache.root / "archives-v1" / "packs" and pack.suffix == ".pack"
    return pack


def test_many_archives_written_at_once_go_to_one_pack_that_another_process_reads(cache: Cache) -> None:
    put_all(cache)
    pack = the_pack(cache)
    index, _, rest = pack.read_bytes().partition(b"\n")
    assert json.loads(index) == [[d, len(a)] for d, a in zip(DIGESTS, ARCHIVES, strict=True)]
    assert rest == b"".join(ARCHIVES)

    fresh = Cache(cache.root)
    assert [fresh.read_archive(d) for d in DIGESTS] == ARCHIVES
    # a caller that needs a file gets the entry's own file, which is read first from then on
    path = fresh.get_archive(DIGESTS[3])
    assert path == fresh.archive_path(DIGESTS[3]) and path.read_bytes() == ARCHIVES[3]
    assert Cache(cache.root).read_archive(DIGESTS[3]) == ARCHIVES[3]
    assert fresh.read_archive("0" * 64) is None


def test_fewer_archives_get_a_file_each(cache: Cache) -> None:
    few = ARCHIVES[:_ARCHIVE_PACK_MIN - 1]
    put_all(cache, few)
    assert stored_files(cache.root) == sorted(cache.archive_path(hashlib.sha256(a).hexdigest()) for a in few)


def test_a_pack_written_after_this_cache_read_the_packs_is_found(cache: Cache) -> None:
    assert cache.read_archive(DIGESTS[0]) is None  # the (empty) pack list is read now
    put_all(cache)
    cache._recent.clear()  # as in another process, that only has the files
    assert cache.read_archive(DIGESTS[0]) == ARCHIVES[0]


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "index lies", "not an index", "extra bytes",
                                    "a size that is a bool", "a size over the archive limit"])
def test_a_damaged_pack_is_a_miss_and_is_removed(cache: Cache, damage: str) -> None:
    put_all(cache)
    pack = the_pack(cache)
    raw = pack.read_bytes()
    index, _, rest = raw.partition(b"\n")
    if damage == "flip a byte":
        raw = index + b"\n" + rest[:5] + bytes([rest[5] ^ 1]) + rest[6:]
    elif damage == "truncate":
        raw = raw[:-4]
    elif damage == "index lies":
        rows = json.loads(index)
        rows[0][1] += 1
        rows[1][1] -= 1
        raw = json.dumps(rows).encode() + b"\n" + rest
    elif damage == "not an index":
        raw = b"{not json\n" + rest
    elif damage == "a size that is a bool":
        rows = json.loads(index)
        raw = json.dumps([[rows[0][0], True], *rows]).encode() + b"\n" + b"x" + rest
    elif damage == "a size over the archive limit":
        rows = json.loads(index)
        raw = json.dumps([[rows[0][0], 61 << 20], *rows[1:]]).encode() + b"\n" + rest
    else:
        raw += b"trailing"
    pack.write_bytes(raw)

    fresh = Cache(cache.root)
    assert fresh.read_archive(DIGESTS[0]) is None
    assert not pack.exists()
    assert all(fresh.read_archive(d) is None for d in DIGESTS)
    assert stored_files(cache.root) == []


def test_a_refused_archive_takes_its_pack_with_it(cache: Cache) -> None:
    put_all(cache)
    pack = the_pack(cache)
    fresh = Cache(cache.root)
    assert fresh.read_archive(DIGESTS[2]) == ARCHIVES[2]
    fresh.discard_archive(DIGESTS[2])  # e.g. its hash matched but it is not a valid archive
    assert not pack.exists() and fresh.read_archive(DIGESTS[2]) is None


def test_an_archive_refused_before_its_pack_is_written_is_not_kept(cache: Cache) -> None:
    for data, digest in zip(ARCHIVES, DIGESTS, strict=True):
        cache.put_archive_behind(data, digest, size=len(data), what="archive")
    cache.discard_archive(DIGESTS[0])
    cache.write_pending()
    pack = the_pack(cache)
    assert DIGESTS[0] not in pack.read_bytes().partition(b"\n")[0].decode()
    assert Cache(cache.root).read_archive(DIGESTS[0]) is None
    assert Cache(cache.root).read_archive(DIGESTS[1]) == ARCHIVES[1]


def test_what_is_not_a_regular_pack_file_is_passed_over_and_left_alone(cache: Cache) -> None:
    import os

    put_all(cache)
    pack = the_pack(cache)
    (pack.parent / "a-folder.pack").mkdir()
    os.mkfifo(pack.parent / "a-fifo.pack")  # opening it for reading would block without O_NONBLOCK
    (pack.parent / "a-link.pack").symlink_to(pack)
    fresh = Cache(cache.root)
    assert [fresh.read_archive(d) for d in DIGESTS] == ARCHIVES
    assert sorted(p.name for p in pack.parent.iterdir()) == sorted(["a-fifo.pack", "a-folder.pack", "a-link.pack",
                                                                    pack.name])


def test_an_unreadable_pack_is_a_miss_but_is_not_deleted(cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub_client import _archive_packs

    put_all(cache)
    pack = the_pack(cache)
    monkeypatch.setattr(_archive_packs.os, "open", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "denied")))
    fresh = Cache(cache.root)
    assert fresh.read_archive(DIGESTS[0]) is None
    assert pack.exists()  # a pack we cannot open now is not evidence of a bad pack


def test_a_refused_archive_takes_every_pack_holding_it_even_one_written_since(cache: Cache) -> None:
    put_all(cache)
    first = the_pack(cache)
    reader = Cache(cache.root)
    assert reader.read_archive(DIGESTS[0]) == ARCHIVES[0]  # reader has listed the packs: only `first`
    put_all(Cache(cache.root))  # another process writes the same archives again
    assert len(list(first.parent.iterdir())) == 2
    reader.discard_archive(DIGESTS[0])
    assert list(first.parent.iterdir()) == []
    assert Cache(cache.root).read_archive(DIGESTS[0]) is None


def test_an_archive_refused_while_its_file_is_written_is_removed(cache: Cache, monkeypatch: pytest.MonkeyPatch) -> None:
    from hub_client import _cache

    few = ARCHIVES[:2]
    for data in few:
        cache.put_archive_behind(data, hashlib.sha256(data).hexdigest(), size=len(data), what="archive")
    real = _cache._write_chunks
    refused = hashlib.sha256(few[0]).hexdigest()

    def write_then_refuse(target: Path, chunks: list[bytes]) -> None:
        real(target, chunks)
        if target.name == refused:
            cache.discard_archive(refused)  # prepare refuses it on another thread just as its file lands

    monkeypatch.setattr(_cache, "_write_chunks", write_then_refuse)
    cache.write_pending()
    assert Cache(cache.root).read_archive(refused) is None
    assert Cache(cache.root).read_archive(hashlib.sha256(few[1]).hexdigest()) == few[1]


def test_get_archive_gives_a_file_for_an_archive_held_in_memory_or_in_a_pack(cache: Cache) -> None:
    for data, digest in zip(ARCHIVES, DIGESTS, strict=True):
        cache.put_archive_behind(data, digest, size=len(data), what="archive")
    assert cache.get_archive(DIGESTS[0]).read_bytes() == ARCHIVES[0]  # before write_pending
    cache.write_pending()
    assert Cache(cache.root).get_archive(DIGESTS[1]).read_bytes() == ARCHIVES[1]


def test_prune_merges_the_packs_without_what_has_its_own_file(cache: Cache) -> None:
    half = len(ARCHIVES) // 2
    put_all(cache)
    put_all(Cache(cache.root), ARCHIVES[:half] + [b"another archive"] * 1 + [b"more %d" % i for i in range(8)])
    fresh = Cache(cache.root)
    assert fresh.get_archive(DIGESTS[0]) is not None  # now also a file of its own
    packs = cache.root / "archives-v1" / "packs"
    assert len(list(packs.iterdir())) == 2
    before = sum(p.stat().st_size for p in packs.iterdir())
    freed = Cache(cache.root).merge_packs()
    (merged,) = packs.iterdir()
    assert freed == before - merged.stat().st_size > 0
    again = Cache(cache.root)
    assert [again.read_archive(d) for d in DIGESTS] == ARCHIVES
    assert DIGESTS[0] not in merged.read_bytes().partition(b"\n")[0].decode()  # it has a file
    assert Cache(cache.root).merge_packs() == 0  # one pack, nothing to drop: left as it is


def test_more_archives_than_one_pack_holds_are_split(cache: Cache) -> None:
    from hub_client import CacheLimits

    put_all(Cache(cache.root, limits=CacheLimits(pack_entries=_ARCHIVE_PACK_MIN)))
    packs = sorted((cache.root / "archives-v1" / "packs").iterdir())
    assert len(packs) == 2 and MAX_ENTRIES >= 1000
    assert [Cache(cache.root).read_archive(d) for d in DIGESTS] == ARCHIVES


def test_a_merge_writes_a_batch_at_a_time(cache: Cache) -> None:
    from hub_client import CacheLimits

    put_all(cache)
    put_all(Cache(cache.root), [b"more %d" % i for i in range(8)])
    Cache(cache.root, limits=CacheLimits(merge_batch=sum(len(a) for a in ARCHIVES) // 2)).merge_packs()
    packs = list((cache.root / "archives-v1" / "packs").iterdir())
    assert len(packs) >= 2  # never all archives in memory at once
    assert [Cache(cache.root).read_archive(d) for d in DIGESTS] == ARCHIVES
