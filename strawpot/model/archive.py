"""The deterministic package archive (gzip'd tar) and its safe reading."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
import zlib
from collections.abc import Iterable, Mapping

from strawpot.model.package_limits import MAX_FILE_SIZE, MAX_FILES, MAX_TOTAL_SIZE
from strawpot.model.paths import UnsafePath, safe_relative_path
from valueclass import Record


class ArchiveError(ValueError):
    """An archive that is corrupt, oversized, or holds a member we refuse to write."""


class ArchiveMember(Record):
    """One file of an archive: its path, its bytes and whether it is executable."""

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


# Bounds on what an archive may hold besides its files, checked before tarfile sees a byte: tarfile
# reads a pax or GNU long-name header whole, so a 300 KB archive could otherwise make it hold 300 MB.
MAX_META_BYTES = 64 * 1024  # one pax (or GNU long name/link) header
MAX_ENTRIES = 2 * MAX_FILES  # files and folders
_BLOCK = 512
_CHUNK = 1 << 16  # bytes inflated at a time, at least
# The most a package's tar stream can be: its files, padded, each behind a header and one meta header.
MAX_TAR_BYTES = MAX_TOTAL_SIZE + MAX_ENTRIES * (3 * _BLOCK + MAX_META_BYTES) + 20 * _BLOCK
MAX_META_RUN = 4  # meta headers in a row before a member (writers put at most pax, long name, long link)
_TAIL = 64 * 1024  # what may follow the tar stream's end marker in the gzip stream (a writer's padding)
_META_TYPES = {b"x": "pax", b"g": "global pax", b"L": "GNU long name", b"K": "GNU long link"}
_UNMODELLED = {b"S", b"X"}  # GNU sparse (extension blocks), Solaris extended (read as pax)
_NO_DATA = {b"1", b"2", b"3", b"4", b"5", b"6"}  # tarfile reads no data behind these, whatever their size
_PAX_RECORD = re.compile(rb"(\d+) ([^=]+)=")  # tarfile's own pattern for a record's start


def read_archive(data: bytes) -> list[ArchiveMember]:
    """Every member, checked: only regular files at safe relative paths, within the package limits.

    The gzip stream is decompressed header by header (see `tar_stream`) before tarfile parses anything.
    """
    raw = tar_stream(data)
    members: list[ArchiveMember] = []
    total = 0
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
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
    except ArchiveError:
        raise
    except (tarfile.TarError, OSError, EOFError, ValueError, UnicodeError, RecursionError, OverflowError) as exc:
        raise ArchiveError(f"corrupt archive: {exc}") from None
    folders = {path.rpartition("/")[0] for path in seen}
    folders |= {folder.rsplit("/", n)[0] for folder in list(folders) for n in range(1, folder.count("/") + 1)}
    if clash := sorted(seen & folders):
        raise ArchiveError(f"member {clash[0]!r} is both a file and a folder")
    return members


def tar_stream(data: bytes, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_TAR_BYTES,
               max_member: int | None = None, whole: bool = False, empty: bool = False) -> bytes:
    """The tar stream inside the gzip bytes, up to its end marker, read header by header as tarfile will
    walk it (a pax `size` record moves the next member's data), and refused before it is inflated when it
    holds what the walk does not model the way tarfile reads it (a sparse or Solaris header, two pax headers
    for one member, a pax record it cannot parse, data behind a folder or link), a negative size, a meta
    header over MAX_META_BYTES or more than MAX_META_RUN of them in a row (tarfile reads a chain of them by
    recursion), a member over `max_member`, more than `max_entries` entries or more than `max_bytes` in all.
    `whole`: the gzip stream is also read to its end (zlib checks its CRC there), which may hold no more than
    a writer's padding; `empty`: a stream of no member is one."""
    raw = _Inflater(data)
    entries = metas = 0
    next_size: int | None = None
    pax = False  # a pax header waits for its member
    pos = 0
    while raw.ensure(pos + _BLOCK) and (block := bytes(raw.out[pos:pos + _BLOCK])).strip(b"\0"):
        size, flag = _number(block[124:136], pos), block[156:157]
        kind = _check_kind(block, size, pos, pax)
        metas = metas + 1 if kind is not None else 0
        if metas > MAX_META_RUN:
            raise ArchiveError(f"corrupt archive: more than {MAX_META_RUN} meta headers in a row at byte {pos}")
        if kind is None:
            entries += 1
            if entries > max_entries:
                raise ArchiveError(f"archive has more than {max_entries} entries, over the limits")
            size, next_size, pax = size if next_size is None else next_size, None, False
            _check_member(block, size, pos, max_member)
        padded = -(-size // _BLOCK) * _BLOCK
        if pos + _BLOCK + padded > max_bytes:
            raise ArchiveError(f"archive unpacks to more than {max_bytes} bytes, over the limits")
        if not raw.ensure(pos + _BLOCK + padded):
            raise ArchiveError("corrupt archive: the tar stream is truncated")
        if flag in (b"x", b"g"):  # tarfile reads the padding as records too
            records = bytes(raw.out[pos + _BLOCK:pos + _BLOCK + padded])
            if flag == b"x":
                next_size, pax = _pax_size(records, next_size), True
            elif _pax_size(records, None) is not None:
                raise ArchiveError(f"a global pax header sets the size of members (at byte {pos})")
        pos += _BLOCK + padded
    if (pos == 0 and not empty) or pos < len(raw.out) < pos + _BLOCK:
        raise ArchiveError("corrupt archive: the tar stream is empty or truncated")
    if whole and raw.ensure(pos + _TAIL):
        raise ArchiveError(f"corrupt archive: more than {_TAIL} bytes follow the tar stream's end")
    del raw.out[pos:]
    raw.out += b"\0" * (2 * _BLOCK)
    return bytes(raw.out)


def _check_kind(block: bytes, size: int, pos: int, pax: bool) -> str | None:
    """A header's kind when it is a meta header (else None), refused when tarfile cannot read it (after the first
    header it would take that for the end, silently), when the walk does not model it as tarfile reads it (`pax`:
    a pax header already waits for its member) or when it is a meta header over MAX_META_BYTES."""
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError as exc:
        raise ArchiveError(f"corrupt archive: a header tarfile cannot read at byte {pos} ({exc})") from None
    flag = block[156:157]
    if flag in _UNMODELLED or (flag == b"x" and pax):
        raise ArchiveError(f"corrupt archive: a header of a kind this reader refuses at byte {pos}")
    kind = _META_TYPES.get(flag)
    if kind is not None and not 0 <= size <= MAX_META_BYTES:
        raise ArchiveError(f"a {kind} header of {size} bytes at byte {pos} (at most {MAX_META_BYTES})")
    return kind


def _check_member(block: bytes, size: int, pos: int, max_member: int | None) -> None:
    """A member's size as the walk will skip it: never negative, none behind a folder or link (tarfile skips
    nothing there), at most `max_member`."""
    if size < 0:
        raise ArchiveError(f"corrupt archive: a member of negative size at byte {pos}")
    flag = block[156:157]
    if size and (flag in _NO_DATA or (flag == b"\0" and block[:100].split(b"\0", 1)[0].endswith(b"/"))):
        raise ArchiveError(f"corrupt archive: a folder or link of {size} bytes at byte {pos}")
    if max_member is not None and size > max_member:
        raise ArchiveError(f"a member of {size} bytes at byte {pos} is over the limit of {max_member}")


class _Inflater:
    """The gzip members' contents, inflated in C as far as the tar walk asks and no further (GzipFile's
    small reads cost more than the inflating)."""

    def __init__(self, data: bytes) -> None:
        self.out = bytearray()
        self._pending = data
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def ensure(self, size: int) -> bool:
        """Whether `out` holds at least `size` bytes (inflating more if needed); False at the stream's end."""
        try:
            while len(self.out) < size:
                if self._inflater.eof:
                    if not self._pending:
                        return False
                    self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a further gzip member
                before = len(self._pending)
                got = self._inflater.decompress(self._pending, max(size - len(self.out), _CHUNK))
                inflater = self._inflater
                self._pending = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                if not got and not inflater.eof and (not self._pending or len(self._pending) == before):
                    raise ArchiveError("corrupt archive: the gzip stream is truncated")
                self.out += got
        except zlib.error as exc:
            raise ArchiveError(f"corrupt archive: {exc}") from None
        return True


def _number(field: bytes, offset: int) -> int:
    """A tar header number: NUL/space-terminated octal, or base-256 when the high bit of the first byte is set."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - (1 << (8 * (len(field) - 1))) if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise ArchiveError(f"corrupt archive: a header at byte {offset} has a bad size field") from None


def _pax_size(records: bytes, found: int | None) -> int | None:
    """The `size` record of a pax header's padded block, else `found`, read as tarfile reads them: `LEN key=value`
    and the record's last byte, from the block's start until a NUL. A record tarfile would read otherwise (one
    not ending in a newline, one past the block) is refused, as is anything after the records but NULs and a
    GNU sparse record."""
    pos = 0
    while pos < len(records) and records[pos] != 0:
        match = _PAX_RECORD.match(records, pos)
        length = int(match.group(1)) if match else 0
        if not match or not 0 < length <= len(records) - pos or records[pos + length - 1:pos + length] != b"\n":
            raise ArchiveError("corrupt archive: a pax record this reader cannot parse")
        key, value = match.group(2), records[match.end():pos + length - 1]
        if key.startswith(b"GNU.sparse."):
            raise ArchiveError("corrupt archive: a GNU sparse pax record")
        if key == b"size":
            try:
                found = int(value)
            except ValueError:
                raise ArchiveError("corrupt archive: a pax size record is not a number") from None
        pos += length
    if records[pos:].strip(b"\0"):
        raise ArchiveError("corrupt archive: a pax record this reader cannot parse")
    return found
