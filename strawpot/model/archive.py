"""The deterministic package archive (gzip'd tar) and its safe reading."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from strawpot.model.package import MAX_FILE_SIZE, MAX_FILES, MAX_TOTAL_SIZE
from strawpot.model.paths import UnsafePath, safe_relative_path


class ArchiveError(ValueError):
    """An archive that is corrupt, oversized, or holds a member we refuse to write."""


@dataclass(frozen=True)
class ArchiveMember:
    path: str
    data: bytes
    executable: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def build_archive(files: Mapping[str, bytes], executables: Iterable[str] = ()) -> bytes:
    """The same files always give the same bytes: sorted, mtime 0, no owners, 0644/0755."""
    execs = set(executables)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(safe_relative_path(path))
            info.size = len(files[path])
            info.mode = 0o755 if path in execs else 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[path]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=6, filename="") as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def read_archive(data: bytes) -> list[ArchiveMember]:
    """Every member, checked: only regular files at safe relative paths, within the package limits."""
    members: list[ArchiveMember] = []
    total = 0
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for info in tar:
                if info.isdir():
                    continue
                if not info.isfile():
                    raise ArchiveError(f"member {info.name!r} is a link or special file")
                try:
                    path = safe_relative_path(info.name)
                except UnsafePath as exc:
                    raise ArchiveError(f"member {info.name!r}: {exc}") from None
                if path in seen:
                    raise ArchiveError(f"member {path!r} appears twice")
                if info.size > MAX_FILE_SIZE or total + info.size > MAX_TOTAL_SIZE or len(members) >= MAX_FILES:
                    raise ArchiveError("archive is larger than the package limits")
                fh = tar.extractfile(info)
                if fh is None:
                    raise ArchiveError(f"member {path!r} cannot be read")
                payload = fh.read()
                total += len(payload)
                seen.add(path)
                members.append(ArchiveMember(path, payload, bool(info.mode & 0o100)))
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"corrupt archive: {exc}") from None
    return members
