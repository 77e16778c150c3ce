"""Content-addressed blob stores: a directory on disk (temp file + rename) and a dict for tests."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DirectoryBlobs:
    """Blobs as files `<root>/<ab>/<sha256>`, written to a temp file, fsynced and renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> Path:
        if not _SHA_RE.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        target = self.path(digest)
        if target.is_file() and target.stat().st_size == len(data):
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, sha256: str) -> bytes | None:
        try:
            return self.path(sha256).read_bytes()
        except (FileNotFoundError, ValueError):
            return None

    def existing_path(self, sha256: str) -> Path | None:
        try:
            path = self.path(sha256)
        except ValueError:
            return None
        return path if path.is_file() else None


class MemoryBlobs:
    """Blobs in a dict, for tests."""

    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        with self._lock:
            self._blobs[digest] = bytes(data)
        return digest

    def get(self, sha256: str) -> bytes | None:
        return self._blobs.get(sha256)

    def __contains__(self, sha256: object) -> bool:
        return sha256 in self._blobs
