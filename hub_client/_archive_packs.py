"""Archive packs: many cached archives in one file, for the download cache (see `_cache`).

A pack is `<folder>/<random>.pack`: one JSON line `[[sha256, size], ...]`, then the archives back to back in
that order. It is written once (temp file, then rename) and never changed, so readers in other threads and
processes see a whole pack or none. Every read re-hashes the entry it returns. A pack that is not one (an
index that does not parse or does not add up to the file's length) or that holds a wrong entry is deleted
whole; a name that cannot be opened as a regular file is passed over and left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

from ._models import parse_json

MAX_ENTRIES = 4096  # archives per pack: keeps the index line (~80 bytes an entry) well under _INDEX_LIMIT
_INDEX_LIMIT = 1 << 20
MERGE_BATCH_BYTES = 64 << 20  # archive bytes held in memory at once while merging
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

Location = tuple[Path, int, int]  # (pack, offset, size)


class ArchivePacks:
    """The packs in one folder: which archives they hold (read once, from the index lines), reading and writing."""

    def __init__(self, folder: Path, *, max_entry: int, write: Callable[[Path, list[bytes]], None],
                 max_entries: int = MAX_ENTRIES, merge_batch: int = MERGE_BATCH_BYTES) -> None:
        self.folder = folder
        self.max_entry = max_entry  # bytes: a larger entry makes the index a lie
        self.max_entries, self.merge_batch = max_entries, merge_batch
        self._write = write  # (target, chunks): the cache's atomic temp-then-rename writer
        self._lock = threading.Lock()
        self._index: dict[str, list[Location]] | None = None

    def has(self, digest: str) -> bool:
        return digest in self._entries()

    def read(self, digest: str) -> bytes | None:
        """The archive's bytes from the first pack whose copy is whole; packs that fail are dropped."""
        for pack, offset, size in list(self._entries().get(digest, ())):
            data = _read_at(pack, offset, size)
            if data is None:
                continue  # cannot be read now (permissions, gone): not evidence that it is bad
            if hashlib.sha256(data).hexdigest() == digest:
                return data
            self.drop(pack)
        return None

    def write(self, archives: list[tuple[str, bytes]]) -> list[Path]:
        """Write `archives` ((sha256, bytes) each) as packs of at most `max_entries`; returns the packs."""
        written = []
        for start in range(0, len(archives), self.max_entries):
            part = archives[start:start + self.max_entries]
            pack = self.folder / f"{secrets.token_hex(16)}.pack"
            head = json.dumps([[digest, len(data)] for digest, data in part]).encode() + b"\n"
            self._write(pack, [head, *(data for _, data in part)])
            with self._lock:
                if self._index is not None:
                    for digest, offset, size in _locations(head, part):
                        self._index.setdefault(digest, []).append((pack, offset, size))
            written.append(pack)
        return written

    def drop_holding(self, digest: str) -> None:
        """Delete every pack that holds `digest`, as the folder is now (other processes may have added some)."""
        with self._lock:
            self._index = None
        for pack, _, _ in self._entries().get(digest, []):
            self.drop(pack)

    def drop(self, pack: Path) -> None:
        with suppress(OSError):
            pack.unlink()
        with self._lock:
            if self._index is not None:
                self._index = {d: kept for d, where in self._index.items()
                               if (kept := [w for w in where if w[0] != pack])}

    def merge(self, keep: Callable[[str], bool]) -> int:
        """Rewrite all packs as few, keeping one copy of each archive for which `keep(digest)` holds; returns
        the bytes freed. For `strawpot cache prune`: packs only accumulate otherwise."""
        packs = sorted({where[0] for locations in self._entries().values() for where in locations})
        if not packs:
            return 0
        before = sum(_size(pack) for pack in packs)
        entries = self._entries()
        kept = [digest for digest in sorted(entries) if keep(digest)]
        if len(packs) == 1 and len(kept) == sum(len(where) for where in entries.values()):
            return 0  # one pack, every entry kept: nothing to gain
        written: list[Path] = []
        batch: list[tuple[str, bytes]] = []
        for digest in kept:  # read and written a batch at a time: a cache may hold more than memory should
            if (data := self.read(digest)) is not None:
                batch.append((digest, data))
            if sum(len(d) for _, d in batch) >= self.merge_batch:
                written += self.write(batch)
                batch = []
        written += self.write(batch) if batch else []
        for pack in packs:
            self.drop(pack)
        return before - sum(_size(pack) for pack in written)

    def _entries(self) -> dict[str, list[Location]]:
        with self._lock:
            if self._index is not None:
                return self._index
        found: dict[str, list[Location]] = {}
        for pack in self._packs():
            try:
                entries = _pack_index(pack, self.max_entry)
            except ValueError:
                self.drop(pack)  # not a pack we wrote: nothing in it can be trusted
                continue
            for digest, offset, size in entries or ():
                found.setdefault(digest, []).append((pack, offset, size))
        with self._lock:
            if self._index is None:
                self._index = found
            return self._index

    def _packs(self) -> Iterator[Path]:
        try:
            names = sorted(os.listdir(self.folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        yield from (self.folder / name for name in names if name.endswith(".pack"))


def _locations(head: bytes, archives: list[tuple[str, bytes]]) -> Iterator[tuple[str, int, int]]:
    offset = len(head)
    for digest, data in archives:
        yield digest, offset, len(data)
        offset += len(data)


def _open_regular(pack: Path) -> int | None:
    """A read-only descriptor of `pack` if it is a regular file (a FIFO must not block us), else None."""
    try:
        fd = os.open(pack, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _pack_index(pack: Path, max_entry: int) -> list[tuple[str, int, int]] | None:
    """(sha256, offset, size) of each archive in a pack; None if it cannot be read now; ValueError if the file
    is not a pack."""
    fd = _open_regular(pack)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            line = fh.readline(_INDEX_LIMIT)
            end = os.fstat(fh.fileno()).st_size
    except OSError:
        return None
    rows = parse_json(line) if line.endswith(b"\n") else None  # ValueError: not JSON
    if not isinstance(rows, list):
        raise ValueError("no index line")
    entries, offset = [], len(line)
    for row in rows:
        if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str) and _SHA256_RE.fullmatch(row[0])
                and type(row[1]) is int and 0 <= row[1] <= max_entry):
            raise ValueError(f"not an index entry: {row!r:.80}")
        entries.append((row[0], offset, row[1]))
        offset += row[1]
    if offset != end:
        raise ValueError("the index does not add up to the file's length")
    return entries


def _read_at(pack: Path, offset: int, size: int) -> bytes | None:
    fd = _open_regular(pack)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            fh.seek(offset)
            data = fh.read(size)
    except OSError:
        return None
    return data if len(data) == size else b""  # short: the pack changed under us, and is not whole


def _size(pack: Path) -> int:
    try:
        return pack.stat().st_size
    except OSError:
        return 0
