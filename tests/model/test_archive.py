"""The package archive: deterministic bytes, and a reader that refuses anything unsafe."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

import pytest

from strawpot.model.archive import ArchiveError, ArchiveMember, build_archive, read_archive
from strawpot.model.package import MAX_FILE_SIZE, MAX_FILES

FILES = {"SKILL.md": b"---\nname: a\n---\n", "bin/run": b"#!/bin/sh\necho hi\n", "docs/z.md": b"z"}


def test_same_files_same_bytes_regardless_of_order() -> None:
    one = build_archive(FILES, {"bin/run"})
    two = build_archive(dict(reversed(list(FILES.items()))), ["bin/run"])
    assert one == two
    assert hashlib.sha256(one).hexdigest() == hashlib.sha256(build_archive(FILES, {"bin/run"})).hexdigest()


def test_exec_bit_changes_the_bytes() -> None:
    assert build_archive(FILES, {"bin/run"}) != build_archive(FILES)


def test_members_are_sorted_with_fixed_metadata() -> None:
    data = build_archive(FILES, {"bin/run"})
    assert gzip.decompress(data)  # a plain gzip stream
    assert data[4:8] == b"\x00\x00\x00\x00"  # gzip header mtime 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == ["SKILL.md", "bin/run", "docs/z.md"]
    assert [i.mode for i in infos] == [0o644, 0o755, 0o644]
    assert {(i.mtime, i.uid, i.gid, i.uname, i.gname) for i in infos} == {(0, 0, 0, "", "")}


def test_round_trip() -> None:
    members = read_archive(build_archive(FILES, {"bin/run"}))
    assert members == [
        ArchiveMember("SKILL.md", FILES["SKILL.md"], False),
        ArchiveMember("bin/run", FILES["bin/run"], True),
        ArchiveMember("docs/z.md", b"z", False),
    ]
    assert members[2].sha256 == hashlib.sha256(b"z").hexdigest()


def test_build_refuses_unsafe_paths() -> None:
    with pytest.raises(ValueError, match="'..'"):
        build_archive({"../x": b""})


def _tar(*entries: tarfile.TarInfo | tuple[str, bytes], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        for entry in entries:
            if isinstance(entry, tarfile.TarInfo):
                tar.addfile(entry)
            else:
                info = tarfile.TarInfo(entry[0])
                info.size = len(entry[1])
                tar.addfile(info, io.BytesIO(entry[1]))
    return gzip.compress(raw.getvalue(), mtime=0)  # the same bytes in every xdist worker: they are test ids


def _special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (_tar(("../evil", b"x")), "'..' component"),
        (_tar(("a/../../evil", b"x")), "'..' component"),
        (_tar(("/etc/passwd", b"x")), "absolute path"),
        (_tar(("C:/evil", b"x")), "absolute path"),
        (_tar(("a\\b", b"x")), "backslash"),
        (_tar(_special("link", tarfile.SYMTYPE, "/etc/passwd")), "link or special file"),
        (_tar(_special("link", tarfile.SYMTYPE, "SKILL.md")), "link or special file"),
        (_tar(("SKILL.md", b"x"), _special("hard", tarfile.LNKTYPE, "SKILL.md")), "link or special file"),
        (_tar(_special("dev", tarfile.CHRTYPE)), "link or special file"),
        (_tar(_special("blk", tarfile.BLKTYPE)), "link or special file"),
        (_tar(_special("fifo", tarfile.FIFOTYPE)), "link or special file"),
        (_tar(("SKILL.md", b"x"), ("SKILL.md", b"y")), "appears twice"),
        (_tar(("a/b", b"x"), ("a//b", b"y")), "empty, '.' or '..' component"),
        (b"not a gzip stream", "corrupt archive"),
        (gzip.compress(b"not a tar", mtime=0), "corrupt archive"),
        (build_archive(FILES)[: len(build_archive(FILES)) // 2], "corrupt archive"),
    ],
)
def test_reader_refuses(archive: bytes, message: str) -> None:
    with pytest.raises(ArchiveError, match=None) as info:
        read_archive(archive)
    assert message in str(info.value)


def test_reader_refuses_more_than_the_file_limits() -> None:
    too_many = _tar(*[(f"f{i}", b"") for i in range(MAX_FILES + 1)])
    with pytest.raises(ArchiveError, match="larger than the package limits"):
        read_archive(too_many)
    info = tarfile.TarInfo("big")
    info.size = MAX_FILE_SIZE + 1
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(info, io.BytesIO(b"\0" * info.size))
    with pytest.raises(ArchiveError, match="larger than the package limits"):
        read_archive(gzip.compress(raw.getvalue(), compresslevel=1))


def test_directory_entries_are_skipped() -> None:
    folder = tarfile.TarInfo("docs")
    folder.type = tarfile.DIRTYPE
    assert [m.path for m in read_archive(_tar(folder, ("docs/a.md", b"a")))] == ["docs/a.md"]
