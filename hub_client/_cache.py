"""A content-addressed download cache shared by all projects: archives by sha256, metadata with ETags.

Layout under the root the caller passes (the app derives it from STRAWPOT_CACHE_DIR / platformdirs)::

    archives-v1/<sha256[:2]>/<sha256>                     archive bytes, named by their own hash
    archives-v1/packs/<random>.pack                       many archives stored at once: one JSON line
                                                          [[sha256, size], ...], then their bytes back to back
    metadata-v1/<registry>/<kind>/<slug>.json             {"source", "etag", "body"} of a /versions
                                                          (or v1 detail) answer
    metadata-v1/<registry>/closure-pack.json              {"kind:slug": {"source", "etag", "body"}}: the
                                                          documents of closure answers, one file for all

`<registry>` is the registry's host plus a short hash of its URL: two registries may both have a
`role/reviewer`, and they must not share metadata (archives need no such split: a hash is a hash).
The number in each bucket name is the format version; a new format gets a new folder.

Every write goes to a temp file in the destination folder and is renamed into place, so readers
(other threads or other strawpot processes) see a whole file or none; concurrent writers of the same
archive write identical bytes, so no lock is needed.

A package's own file, when there is one, is newer than its pack entry: writing the pack removes the files of
the packages it holds. The pack is one file because creating a hundred small files costs more than the
install they serve (0.3-0.9 ms each on a slow disk); past `CacheLimits.metadata_pack` bytes its oldest entries go.
For the same reason archives written together (`_ARCHIVE_PACK_MIN` or more, kept in memory by the bundled
downloads so far) go to one archive pack (`_archive_packs`), never changed after; an archive's own file, when
there is one, is read first, and `strawpot cache prune` merges the packs.

Corrupted archives: every read re-hashes the bytes. An entry whose hash is wrong is deleted and
reported as a miss (never raised, never returned), so the client simply downloads it again; in an archive
pack (whose entries cannot be deleted one by one) the whole pack goes, and its other archives with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from valueclass import Record

from ._archive_packs import MAX_ENTRIES, MERGE_BATCH_BYTES, ArchivePacks
from ._exceptions import IntegrityError
from ._models import check_slug, kind_and_plural, parse_json
from ._responses import MAX_ARCHIVE_BYTES
from ._session import _log

__all__ = ["Cache", "CacheLimits", "CachedMetadata"]

ARCHIVES_BUCKET = "archives-v1"
METADATA_BUCKET = "metadata-v1"
_CHUNK = 1 << 16
_PACK = "closure-pack.json"


class CacheLimits(Record):
    """How much a Cache holds: bytes of closure documents kept per registry (`metadata_pack`), bytes of archives
    kept in memory while their files are written (`recent`), archives per pack file (`pack_entries`), and
    archive bytes held in memory at once while packs are merged (`merge_batch`)."""

    _fields = ("metadata_pack", "recent", "pack_entries", "merge_batch")
    metadata_pack: int
    recent: int
    pack_entries: int
    merge_batch: int

    def __init__(self, metadata_pack: int = 8 << 20, recent: int = 128 << 20, pack_entries: int = MAX_ENTRIES,
                 merge_batch: int = MERGE_BATCH_BYTES) -> None:
        self.__dict__.update(metadata_pack=metadata_pack, recent=recent, pack_entries=pack_entries,
                             merge_batch=merge_batch)
_ARCHIVE_PACKS = "packs"
_ARCHIVE_PACK_MIN = 8  # archives written at once that go to one pack file rather than a file each
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def _check_sha256(sha256: str) -> str:
    digest = sha256.lower() if isinstance(sha256, str) else sha256
    if not isinstance(digest, str) or not _SHA256_RE.fullmatch(digest):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return digest


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def registry_key(base_url: str) -> str:
    """A folder name for one registry: readable host, plus a hash of the whole normalised URL."""
    normalised = base_url.strip().rstrip("/").lower()
    host = re.sub(r"[^a-z0-9.-]+", "_", urlsplit(normalised).netloc) or "registry"
    return f"{host}-{hashlib.sha256(normalised.encode()).hexdigest()[:12]}"


def _write_chunks(target: Path, chunks: list[bytes]) -> None:
    with _atomic_writer(target) as fh:
        for chunk in chunks:
            fh.write(chunk)


@contextmanager
def _atomic_writer(target: Path) -> Iterator[IO[bytes]]:
    """Yield a temp file beside `target`; on a clean exit it replaces `target`, otherwise it is removed.

    No fsync: every entry is checked when it is read (an archive re-hashed, metadata parsed), so one
    that a power cut left torn is a miss, and the cache never needed to survive one (it did cost
    0.3 s of a 100-package install).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class CachedMetadata(Record):
    """A cached metadata answer: the parsed JSON body, its ETag, and which endpoint it came from."""

    _fields = ("body", "etag", "source")
    body: Any
    etag: str | None
    source: str  # "versions" (the extension) or "detail" (v1 fallback)

    def __init__(self, body: Any, etag: str | None, source: str) -> None:
        self.__dict__.update(body=body, etag=etag, source=source)


class Cache:
    """The download cache rooted at `root` (created on first write)."""

    def __init__(self, root: Path, *, limits: CacheLimits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or CacheLimits()
        # for `-v`: archives this Cache stored (not hits) or already reported as hits (told once)
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()
        # archives verified in this process whose file may still be on its way (put_archive_behind)
        self._recent: dict[str, bytes] = {}
        self._recent_bytes = 0
        self._unwritten: list[str] = []
        self._packs: dict[str, dict[str, Any]] = {}  # registry_key -> the pack's entries, read once
        self._pack_lock = threading.Lock()
        self.packs = ArchivePacks(self.root / ARCHIVES_BUCKET / _ARCHIVE_PACKS, max_entry=MAX_ARCHIVE_BYTES,
                                  write=_write_chunks, max_entries=self.limits.pack_entries,
                                  merge_batch=self.limits.merge_batch)

    def report_hit(self, sha256: str, what: str) -> None:
        """Log (INFO, once per archive) that `what` came from the cache, unless this Cache stored it itself."""
        digest = sha256.lower()
        with self._seen_lock:
            if digest in self._seen:
                return
            self._seen.add(digest)
        _log.info("cache hit: %s (sha256 %s…)", what, digest[:12])

    # -- archives ---------------------------------------------------------------------------------

    def archive_path(self, sha256: str) -> Path:
        """Where the archive with this sha256 lives (whether or not it is there)."""
        digest = _check_sha256(sha256)
        return self.root / ARCHIVES_BUCKET / digest[:2] / digest

    def get_archive(self, sha256: str) -> Path | None:
        """The path of a cached archive whose bytes hash to `sha256` (checked now), else None.

        A corrupted entry is deleted and reported as a miss. An archive held in memory (`put_archive_behind`)
        or in a pack gets its own file now: callers of this method want a file. To know whether an archive is
        cached, or to read it, use `has_archive` and `read_archive`.
        """
        path = self.archive_path(sha256)
        digest = sha256.lower()
        if (kept := self._recent.get(digest)) is not None or not path.is_file():
            data = kept if kept is not None else self.packs.read(digest)
            if data is None:
                return None
            _write_chunks(path, [data])
            return path
        try:
            actual = _file_sha256(path)
        except FileNotFoundError:
            return None
        if actual != sha256.lower():
            path.unlink(missing_ok=True)
            return None
        return path

    def has_archive(self, sha256: str) -> bool:
        """Whether the archive is in the cache (its own file, a pack or memory), without reading it: for
        deciding what to download; `read_archive` checks the bytes it returns."""
        digest = _check_sha256(sha256)
        return digest in self._recent or self.archive_path(digest).is_file() or self.packs.has(digest)

    def read_archive(self, sha256: str) -> bytes | None:
        """The cached archive's bytes, verified in memory: the bytes returned are the bytes checked."""
        if (kept := self._recent.get(sha256.lower())) is not None:
            return kept
        path = self.archive_path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return self.packs.read(sha256.lower())
        if hashlib.sha256(data).hexdigest() != sha256.lower():
            path.unlink(missing_ok=True)
            return None
        return data

    def discard_archive(self, sha256: str) -> None:
        """Forget a cached archive (one that was refused after it was stored), with every pack holding it."""
        digest = _check_sha256(sha256)
        self.archive_path(digest).unlink(missing_ok=True)
        with self._seen_lock:
            self._recent_bytes -= len(self._recent.pop(digest, b""))
        self.packs.drop_holding(digest)

    def merge_packs(self) -> int:
        """Merge the archive packs into as few as they fit, without the archives that have a file of their
        own; returns the bytes freed."""
        return self.packs.merge(keep=lambda digest: not self.archive_path(digest).is_file())

    def put_archive_behind(self, data: bytes, sha256: str, *, size: int | None, what: str) -> Path:
        """`put_archive` whose file is written later, by `write_pending` (on another thread), while the caller
        goes on.

        The bytes are checked now (IntegrityError, nothing kept, on a mismatch) and kept in memory for this
        process, so `read_archive` and `get_archive` find them before the file is there. Past
        `CacheLimits.recent` bytes kept, the file is written now instead.
        """
        expected = _check_sha256(sha256)
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected or (size is not None and len(data) != size):
            raise IntegrityError(what, expected, actual, expected_size=size, actual_size=len(data))
        with self._seen_lock:
            keep = self._recent_bytes + len(data) <= self.limits.recent
            if keep and expected not in self._recent:
                self._recent[expected] = data
                self._recent_bytes += len(data)
                self._unwritten.append(expected)
            self._seen.add(expected)
        if not keep:
            return self.put_archive(data, expected, size=size, what=what)
        return self.archive_path(expected)

    def write_pending(self) -> None:
        """Write the files of the archives `put_archive_behind` kept so far (one task for many: cheap to hand
        to a thread)."""
        with self._seen_lock:
            todo, self._unwritten = self._unwritten, []
            kept = [(digest, self._recent[digest]) for digest in todo if digest in self._recent]
        packs: list[Path] = []
        if len(kept) < _ARCHIVE_PACK_MIN:
            for digest, data in kept:
                _write_chunks(self.archive_path(digest), [data])
        else:
            packs = self.packs.write(kept)
        with self._seen_lock:
            refused = [digest for digest, _ in kept if digest not in self._recent]  # while being written
        for digest in refused:
            self.archive_path(digest).unlink(missing_ok=True)
        for pack in packs if refused else ():
            self.packs.drop(pack)

    def put_archive(
        self, data: bytes, sha256: str, *, size: int | None = None, what: str = "archive"
    ) -> Path:
        """Store `data` under `sha256` after checking it; IntegrityError (and nothing stored) on mismatch."""
        return self.put_archive_stream([data], sha256, size=size, what=what)

    def put_archive_stream(
        self,
        chunks: Iterable[bytes],
        sha256: str,
        *,
        size: int | None = None,
        what: str = "archive",
        url: str | None = None,
        limit: int | None = None,
    ) -> Path:
        """Stream chunks into the cache, hashing as they come; stored only if sha256 (and size) match.

        Reading stops as soon as more than `size` (or `limit`) bytes arrive. Errors raised by `chunks`
        propagate and leave nothing behind.
        """
        target = self.archive_path(sha256)
        expected = sha256.lower()
        digest = hashlib.sha256()
        received = 0
        with _atomic_writer(target) as fh:
            for chunk in chunks:
                received += len(chunk)
                bound = size if size is not None else limit
                if bound is not None and (received > bound or (limit is not None and received > limit)):
                    raise IntegrityError(
                        what, expected, None, expected_size=bound, actual_size=received, url=url
                    )
                digest.update(chunk)
                fh.write(chunk)
            actual = digest.hexdigest()
            if actual != expected or (size is not None and received != size):
                raise IntegrityError(
                    what, expected, actual, expected_size=size, actual_size=received, url=url
                )
        with self._seen_lock:
            self._seen.add(expected)
        return target

    # -- metadata ---------------------------------------------------------------------------------

    def _metadata_path(self, registry: str, kind: str, slug: str) -> Path:
        singular, _ = kind_and_plural(kind)
        return self.root / METADATA_BUCKET / registry_key(registry) / singular / f"{check_slug(slug)}.json"

    def get_metadata(self, registry: str, kind: str, slug: str) -> CachedMetadata | None:
        """The cached answer for a package of the registry at URL `registry`, or None (also if unreadable)."""
        path = self._metadata_path(registry, kind, slug)
        try:
            raw = parse_json(path.read_bytes())
        except FileNotFoundError:
            raw = self._pack(registry).get(f"{kind_and_plural(kind)[0]}:{slug}")
            if raw is None:
                return None
        except ValueError:
            path.unlink(missing_ok=True)
            return None
        try:
            return CachedMetadata(body=raw["body"], etag=raw.get("etag"), source=str(raw["source"]))
        except (KeyError, TypeError, AttributeError):
            path.unlink(missing_ok=True)
            return None

    def put_metadata_many(self, registry: str, entries: Iterable[tuple[str, str, Any, str | None, str]]) -> None:
        """Store many answers, (kind, slug, body, etag, source) each, in the registry's pack (one file)."""
        key = registry_key(registry)
        fresh = {f"{kind_and_plural(kind)[0]}:{check_slug(slug)}": {"source": source, "etag": etag, "body": body}
                 for kind, slug, body, etag, source in entries}
        with self._pack_lock:
            kept = {k: v for k, v in self._pack(registry).items() if k not in fresh}  # oldest first
            merged = {**kept, **fresh}
            payload = json.dumps(merged).encode()
            while len(payload) > self.limits.metadata_pack and kept:
                kept = dict(list(kept.items())[len(kept) // 2:])  # drop the older half of what came before
                merged = {**kept, **fresh}
                payload = json.dumps(merged).encode()
            with _atomic_writer(self.root / METADATA_BUCKET / key / _PACK) as fh:
                fh.write(payload)
            self._packs[key] = merged
        folders: dict[str, bool] = {}  # a kind's folder, if there is none, holds no file to remove
        for name in fresh:  # the pack is now the newest answer for these
            kind, _, slug = name.partition(":")
            path = self._metadata_path(registry, kind, slug)
            if kind not in folders:
                folders[kind] = path.parent.is_dir()
            if folders[kind]:
                path.unlink(missing_ok=True)

    def _pack(self, registry: str) -> dict[str, Any]:
        key = registry_key(registry)
        if (found := self._packs.get(key)) is not None:
            return found
        path = self.root / METADATA_BUCKET / key / _PACK
        try:
            raw = parse_json(path.read_bytes())
        except FileNotFoundError:
            raw = {}
        except ValueError:
            path.unlink(missing_ok=True)
            raw = {}
        return self._packs.setdefault(key, raw if isinstance(raw, dict) else {})

    def put_metadata(
        self, registry: str, kind: str, slug: str, body: Any, *, etag: str | None, source: str
    ) -> None:
        """Store a metadata answer (replacing any previous one)."""
        payload = json.dumps({"source": source, "etag": etag, "body": body}, sort_keys=True).encode()
        with _atomic_writer(self._metadata_path(registry, kind, slug)) as fh:
            fh.write(payload)
