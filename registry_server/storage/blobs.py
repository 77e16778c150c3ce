"""Content-addressed blob stores: the `Blobs` protocol, a directory on disk (temp file + rename), a dict for tests.

(The S3 store is `registry_server.storage.s3`.)"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from strawpot.model.fs import atomic_write

SHA_RE = re.compile(r"^[0-9a-f]{64}$")
CHUNK = 256 * 1024  # what one read of a streamed blob holds in memory


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Blobs(Protocol):
    """Immutable bytes named by their sha256. `put` of bytes already stored refreshes their age, so a
    publish reusing an unreferenced blob is not collected under it (see `registry_server.gc`)."""

    remote: bool  # reads cross the network: never on the event loop

    def put(self, data: bytes) -> str: ...
    def get(self, sha256: str) -> bytes | None: ...
    def open(self, sha256: str) -> Iterator[bytes] | None:
        """The blob in chunks of at most `CHUNK` bytes (blocking reads), or None when it is missing."""
        ...

    def existing_path(self, sha256: str) -> Path | None: ...
    def list(self) -> Iterator[tuple[str, float]]: ...
    def delete(self, sha256: str) -> None: ...


class DirectoryBlobs:
    """Blobs as files `<root>/<ab>/<sha256>`, written to a temp file, fsynced and renamed into place."""

    remote = False

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> Path:
        if not SHA_RE.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        target = self.path(digest)
        if target.is_file() and target.stat().st_size == len(data):
            os.utime(target)  # young again: gc's grace period starts over
            return digest
        atomic_write(target, data, mode=0o600)  # owner-only, as the registry's blobs always were
        return digest

    def get(self, sha256: str) -> bytes | None:
        try:
            return self.path(sha256).read_bytes()
        except (FileNotFoundError, ValueError):
            return None

    def open(self, sha256: str) -> Iterator[bytes] | None:
        try:
            fh = self.path(sha256).open("rb")
        except (FileNotFoundError, ValueError):
            return None
        return _chunks_of(fh)

    def existing_path(self, sha256: str) -> Path | None:
        try:
            path = self.path(sha256)
        except ValueError:
            return None
        return path if path.is_file() else None

    def list(self) -> Iterator[tuple[str, float]]:
        """Every stored blob with its modification time (seconds since the epoch)."""
        for path in self.root.glob("??/*"):
            if SHA_RE.match(path.name):
                try:
                    yield path.name, path.stat().st_mtime
                except FileNotFoundError:
                    continue

    def delete(self, sha256: str) -> None:
        self.path(sha256).unlink(missing_ok=True)


class MemoryBlobs:
    """Blobs in a dict, for tests."""

    remote = False

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}
        self._times: dict[str, float] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        with self._lock:
            self._blobs[digest] = bytes(data)
            self._times[digest] = time.time()
        return digest

    def existing_path(self, sha256: str) -> Path | None:
        return None

    def list(self) -> Iterator[tuple[str, float]]:
        with self._lock:
            return iter(list(self._times.items()))

    def delete(self, sha256: str) -> None:
        with self._lock:
            self._blobs.pop(sha256, None)
            self._times.pop(sha256, None)

    def get(self, sha256: str) -> bytes | None:
        return self._blobs.get(sha256)

    def open(self, sha256: str) -> Iterator[bytes] | None:
        data = self._blobs.get(sha256)
        if data is None:
            return None
        return (data[i:i + CHUNK] for i in range(0, len(data), CHUNK))

    def __contains__(self, sha256: object) -> bool:
        return sha256 in self._blobs


def _chunks_of(fh: BinaryIO) -> Iterator[bytes]:
    with fh:
        while chunk := fh.read(CHUNK):
            yield chunk
