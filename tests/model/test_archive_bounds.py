"""Archive metadata is bounded before tarfile reads it: a small archive cannot make the reader hold a
huge pax header, and an archive of thousands of members is refused by count."""

from __future__ import annotations

import gzip
import io
import tarfile
import tracemalloc

import pytest

from strawpot.model import archive
from strawpot.model.archive import (
    MAX_ENTRIES,
    MAX_META_BYTES,
    MAX_META_RUN,
    ArchiveError,
    build_archive,
    read_archive,
)
from tests._tar_headers import header, with_size

MB = 1024 * 1024


def pax_bomb(header_mb: int) -> bytes:
    """A ~1 KB-per-MB gzip whose tar stream starts with a pax header of `header_mb` MB (gzip members
    concatenated: the same compressed megabyte repeated, so building it is instant)."""
    zeros = gzip.compress(b"\0" * MB, compresslevel=9)
    head = gzip.compress(header("././@PaxHeader", header_mb * MB, tarfile.XHDTYPE))
    return head + zeros * header_mb


def test_a_300_mb_pax_header_is_refused_in_bounded_memory() -> None:
    bomb = pax_bomb(300)
    assert len(bomb) < 400 * 1024  # the archive itself is small
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError, match=f"pax header of {300 * MB} bytes .*at most {MAX_META_BYTES}"):
            read_archive(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * MB, peak


@pytest.mark.parametrize("typeflag", [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XGLTYPE])
def test_other_meta_headers_are_bounded_too(typeflag: bytes) -> None:
    size = MAX_META_BYTES + 1
    raw = header("././@LongLink", size, typeflag) + b"a" * size + b"\0" * (-size % 512) + b"\0" * 1024
    with pytest.raises(ArchiveError, match=f"header of {size} bytes"):
        read_archive(gzip.compress(raw))


def test_thousands_of_members_are_refused_by_count() -> None:
    raw = b"".join(header(f"f{i}", 0, tarfile.REGTYPE) for i in range(5000)) + b"\0" * 1024
    with pytest.raises(ArchiveError, match=f"more than {MAX_ENTRIES} entries"):
        read_archive(gzip.compress(raw))


def _pax_sized(ustar_size: int, pax_size: int) -> bytes:
    """A pax header saying `size=pax_size`, then a.txt whose ustar header says `ustar_size`, then 1536
    bytes that start with a 50 MB pax header's header block, then the end marker."""
    records = b"22 size=" + str(pax_size).encode().rjust(13, b"0") + b"\n"
    assert len(records) == 22
    hidden = header("././@PaxHeader", 50 * MB, tarfile.XHDTYPE)
    return (
        header("././@PaxHeader", len(records), tarfile.XHDTYPE) + records + b"\0" * (-len(records) % 512)
        + header("a.txt", ustar_size, tarfile.REGTYPE)
        + hidden + b"\0" * 1024
        + b"\0" * 1024
    )


def test_the_walk_follows_a_pax_size_as_tarfile_does() -> None:
    """The pax size (1536) wins over the ustar one (0): the hidden header is a.txt's data to tarfile,
    and to the walk, so the archive reads as tarfile sees it."""
    members = read_archive(gzip.compress(_pax_sized(ustar_size=0, pax_size=1536)))
    assert [m.path for m in members] == ["a.txt"] and len(members[0].data) == 1536


def test_a_meta_header_hidden_behind_a_pax_size_is_still_refused() -> None:
    """The ustar size (1536) says the hidden header is data, but tarfile follows the pax size (0) and
    would read it as a 50 MB pax header: the walk follows tarfile and refuses it."""
    with pytest.raises(ArchiveError, match=f"pax header of {50 * MB} bytes"):
        read_archive(gzip.compress(_pax_sized(ustar_size=1536, pax_size=0)))


def test_an_archive_that_unpacks_past_the_package_limits_is_refused() -> None:
    raw = header("big.bin", 70 * MB, tarfile.REGTYPE)
    data = gzip.compress(raw) + gzip.compress(b"\0" * MB, compresslevel=9) * 71
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        read_archive(data)


def test_a_truncated_or_empty_tar_stream_is_corrupt() -> None:
    with pytest.raises(ArchiveError, match="corrupt archive"):
        read_archive(gzip.compress(b"not a tar"))
    with pytest.raises(ArchiveError, match="corrupt archive"):
        read_archive(gzip.compress(b""))


def test_ordinary_archives_still_read_the_same() -> None:
    files = {"SKILL.md": b"---\nname: a\n---\n", "lib/" + "x" * 150 + ".py": b"print(1)\n", "bin/run": b"#!/bin/sh\n"}
    members = read_archive(build_archive(files, executables={"bin/run"}))
    assert {m.path: (m.data, m.executable) for m in members} == {
        path: (data, path == "bin/run") for path, data in files.items()
    }
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:  # GNU long names, not pax
        info = tarfile.TarInfo("d/" + "y" * 200)
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    assert [m.data for m in read_archive(gzip.compress(raw.getvalue()))] == [b"abc"]


def test_a_chain_of_meta_headers_is_refused_before_tarfile_recurses_through_it() -> None:
    chain = (header("././@LongLink", 5, tarfile.GNUTYPE_LONGNAME) + b"name\0".ljust(512, b"\0")) * 3000
    raw = chain + header("a.txt", 0, tarfile.REGTYPE) + b"\0" * 1024
    with pytest.raises(ArchiveError, match=f"more than {MAX_META_RUN} meta headers in a row"):
        read_archive(gzip.compress(raw))


def test_a_negative_size_is_refused() -> None:
    raw = with_size(header("d", 0, tarfile.DIRTYPE), -(1 << 40)) + header("a.txt", 0, tarfile.REGTYPE) + b"\0" * 1024
    with pytest.raises(ArchiveError, match="negative size"):
        read_archive(gzip.compress(raw))


def test_a_pax_record_in_the_padding_is_read_as_tarfile_reads_it() -> None:
    """tarfile reads records on into the header's padding: a `size=0` there hides what follows from a walk that
    stops at the header's size, here a pax header over the bound."""
    block = b"10 a=bcde\n" + b"9 size=0\n"
    hidden = header("././@PaxHeader", MAX_META_BYTES + 1, tarfile.XHDTYPE) + b"\0" * 512
    raw = (header("././@PaxHeader", 10, tarfile.XHDTYPE) + block.ljust(512, b"\0")
           + header("a.txt", len(hidden), tarfile.REGTYPE) + hidden + b"\0" * 1024)
    with pytest.raises(ArchiveError, match=f"pax header of {MAX_META_BYTES + 1} bytes"):
        read_archive(gzip.compress(raw))


def test_a_pax_record_without_its_newline_is_refused() -> None:
    raw = (header("././@PaxHeader", 12, tarfile.XHDTYPE) + b"12 size=1024".ljust(512, b"\0")
           + header("a.txt", 0, tarfile.REGTYPE) + b"\0" * 1024)
    with pytest.raises(ArchiveError, match="pax record this reader cannot parse"):
        read_archive(gzip.compress(raw))


def test_a_v7_folder_named_up_to_a_nul_holds_no_data() -> None:
    """tarfile cuts the name at its first NUL: `d/\\0x` is a folder, and it skips none of the size."""
    folder = bytearray(header("d/", 0, tarfile.AREGTYPE))
    folder[:4] = b"d/\0x"
    raw = with_size(bytes(folder), 1024) + b"\0" * 1024 + header("a.txt", 0, tarfile.REGTYPE) + b"\0" * 1024
    with pytest.raises(ArchiveError, match="folder or link of 1024 bytes"):
        read_archive(gzip.compress(raw))


def test_a_recursion_past_the_walk_is_still_one_archive_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "tar_stream", lambda data: gzip.decompress(data))  # as if the walk missed it
    chain = (header("././@LongLink", 5, tarfile.GNUTYPE_LONGNAME) + b"name\0".ljust(512, b"\0")) * 3000
    with pytest.raises(ArchiveError, match="corrupt archive"):
        read_archive(gzip.compress(chain + header("a.txt", 0, tarfile.REGTYPE) + b"\0" * 1024))


@pytest.mark.parametrize("at, damage", [(148, b"0000000\0"), (100, b"zzzzzzz\0")], ids=["checksum", "mode"])
def test_a_damaged_header_after_the_first_is_refused_not_taken_for_the_end(at: int, damage: bytes) -> None:
    """tarfile ends an archive quietly at a header it cannot read past the first: two files of three came back."""
    raw = bytearray(gzip.decompress(build_archive({"a.txt": b"A", "b.txt": b"B", "c.txt": b"C"})))
    third = raw.index(b"c.txt") // 512 * 512  # c.txt's own header (its pax header names it first)
    third = raw.index(b"c.txt", third + 512) // 512 * 512 if raw[third + 156:third + 157] == b"x" else third
    raw[third + at:third + at + len(damage)] = damage
    with pytest.raises(ArchiveError, match="a header tarfile cannot read"):
        read_archive(gzip.compress(bytes(raw)))
