"""Archive packs: the archives of one bundled download stored as one file, read back verified by any process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from hub_client import Cache
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


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "index lies", "not an index", "extra bytes"])
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
