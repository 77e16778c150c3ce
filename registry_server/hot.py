"""A fast path in front of the router for the hottest reads: `versions`, `file` and `archive`.

Everything else (and every miss) goes through Starlette unchanged; the answers are byte-for-byte
the ones the handlers in `packages.py` give. A version list not cached yet is loaded here (in a
worker thread) rather than after routing; a small blob not cached yet is read here directly when it is
local (a few KB from the blob directory costs less than the thread hop it would take to read it
elsewhere), and left to the handler's worker thread when it is remote (S3).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool

from registry_server.cache import PackageVersions
from registry_server.state import KINDS, Registry
from registry_server.storage.base import VersionRecord
from resolver.requirement import SLUG_PATTERN

_SLUG = SLUG_PATTERN.pattern.removeprefix("^").removesuffix("$")
_PATH_RE = re.compile(rf"/api/v1/([a-z]+)/({_SLUG})/(versions|file|versions/([^/]+)/archive)")
_IMMUTABLE = b"public, max-age=31536000, immutable"
_INLINE_READ = 64 * 1024  # blobs up to this size are read on the event loop on a cache miss

Headers = list[tuple[bytes, bytes]]


def _etag_matches(scope: dict[str, Any], etag: bytes) -> bool:
    for name, value in scope["headers"]:
        if name == b"if-none-match":
            tags = {t.strip().removeprefix(b"W/") for t in value.split(b",")}
            return b"*" in tags or etag in tags
    return False


class HotPaths:
    """ASGI middleware answering cache hits directly; it needs `scope["app"].state.registry`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            match = _PATH_RE.fullmatch(scope["path"])
            if match and (kind := KINDS.get(match[1])) is not None:
                reg: Registry = scope["app"].state.registry
                entry = reg.versions.peek(kind, match[2])
                if entry is None:
                    entry = await run_in_threadpool(reg.versions.load, kind, match[2])
                if entry is not None:
                    answer: tuple[int, Headers, bytes] | None
                    if match[3] == "versions":
                        answer = self._versions(scope, entry)
                    elif match[3] == "file":
                        answer = self._file(scope, reg, entry)
                    else:
                        answer = self._archive(scope, reg, entry, match[4])
                        if answer is not None and answer[0] == 200:
                            reg.downloads.add(kind, match[2])
                    if answer is not None:
                        await _respond(send, *answer)
                        return
        await self.app(scope, receive, send)

    @staticmethod
    def _versions(scope: dict[str, Any], entry: PackageVersions) -> tuple[int, Headers, bytes]:
        etag = entry.etag.encode()
        headers = [(b"etag", etag), (b"cache-control", b"no-cache")]
        if _etag_matches(scope, etag):
            return 304, headers, b""
        return 200, [(b"content-type", b"application/json"), *headers], entry.body

    @staticmethod
    def _file(scope: dict[str, Any], reg: Registry, entry: PackageVersions) -> tuple[int, Headers, bytes] | None:
        query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
        version = query.get("version")
        record: VersionRecord | None = entry.by_version.get(version) if version else entry.latest
        path = query.get("path")
        if record is None or not path:
            return None  # the slow path words the 404 (or picks the main file)
        file = next((f for f in record.files if f.path == path), None)
        data = _small_blob(reg, file.sha256, file.size) if file is not None else None
        if file is None or data is None:
            return None
        etag = f'"{file.sha256}"'.encode()
        headers = [(b"etag", etag), (b"cache-control", _IMMUTABLE if version else b"no-cache")]
        if _etag_matches(scope, etag):
            return 304, headers, b""
        return 200, [(b"content-type", reg.blobs.content_type(file.sha256, data).encode()), *headers], data

    @staticmethod
    def _archive(
        scope: dict[str, Any], reg: Registry, entry: PackageVersions, version: str
    ) -> tuple[int, Headers, bytes] | None:
        record = entry.by_version.get(version)
        if record is None:
            return None  # the slow path normalises the version or words the 404
        etag = f'"{record.archive_sha256}"'.encode()
        headers = [(b"etag", etag), (b"cache-control", _IMMUTABLE)]
        if _etag_matches(scope, etag):
            return 304, headers, b""
        data = _small_blob(reg, record.archive_sha256, record.archive_size)
        if data is None:
            return None  # large (streamed by the slow path) or missing (a 500 there)
        return 200, [(b"content-type", b"application/gzip"), *headers], data


def _small_blob(reg: Registry, sha256: str, size: int) -> bytes | None:
    """A cached blob, or a small local one read now; None for a large one or a remote one not in the cache
    (the handler reads those in a worker thread: a GET from S3 must never stall the event loop)."""
    data = reg.blobs.peek(sha256)
    if data is None and size <= _INLINE_READ and not reg.storage.remote_blobs:
        data = reg.blobs.load(sha256)
    return data


async def _respond(send: Any, status: int, headers: Headers, body: bytes) -> None:
    if status != 304:  # a 304 may only state the length of the 200 it stands for (RFC 9110 8.6): none
        headers = [(b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
