"""Registry answers as they stream in: size caps, the request deadline, and the JSON shapes the client expects."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import httpx

from valueclass import Record

from ._exceptions import ProtocolError, _map_error
from ._models import parse_json

__all__ = ["MAX_ARCHIVE_BYTES", "MAX_FILE_BYTES", "MAX_JSON_BYTES", "DeadlineStream", "SizeLimits",
           "discard_if_cut_off", "json_object", "read_capped", "versions_outcome"]

T = TypeVar("T")

# A JSON answer or an error body larger than this is refused (a package is at most 50 MB in all),
# and so is a v1 file over the registry's 10 MB limit: a hostile server cannot exhaust memory.
MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 10 * 1024 * 1024
# An archive holds at most 50 MB of files (the registry's limit) plus tar headers; one declared
# larger is refused before a byte of it is fetched, and one without a declared size stops here.
MAX_ARCHIVE_BYTES = 60 * 1024 * 1024


class SizeLimits(Record):
    """The largest answers a client accepts, in bytes: a JSON answer or error body, a v1 file, an archive."""

    _fields = ("json", "file", "archive")
    json: int
    file: int
    archive: int

    def __init__(self, json: int = MAX_JSON_BYTES, file: int = MAX_FILE_BYTES, archive: int = MAX_ARCHIVE_BYTES) -> None:
        self.__dict__.update(json=json, file=file, archive=archive)


class DeadlineStream(httpx.SyncByteStream):
    """A response body that raises ReadTimeout once `deadline` (an instant of `clock`) has passed."""

    def __init__(self, stream: Iterable[bytes], deadline: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream, self._deadline, self._clock = stream, deadline, clock

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if self._clock() > self._deadline:
                raise httpx.ReadTimeout("the request deadline passed")
            yield chunk

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


def read_capped(response: httpx.Response, limit: int | None = None) -> bytes:
    """Read the streamed body, refusing it as soon as it passes `limit` (default MAX_JSON_BYTES) bytes."""
    limit = MAX_JSON_BYTES if limit is None else limit
    chunks: list[bytes] = []
    total = 0
    for chunk in response.iter_bytes():
        total += len(chunk)
        if total > limit:
            url = str(response.request.url)
            raise ProtocolError(f"the answer from {url} is larger than {limit} bytes; refused", url=url)
        chunks.append(chunk)
    data = b"".join(chunks)
    response._content = data  # what httpx's own read() does, so .content/.text/.json() work afterwards
    return data


def discard_if_cut_off(read: Callable[[httpx.Response], T]) -> Callable[[httpx.Response], T]:
    """`read` for the answer to an extension's POST, which is never sent twice: a body cut off midway (the
    registry was reached) is a ProtocolError, an answer to discard, so that the caller falls back to GETs
    (retried as GETs are) instead of giving up on the registry. Timeouts stay what they are."""

    def whole(response: httpx.Response) -> T:
        try:
            return read(response)
        except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
            url = str(response.request.url)
            raise ProtocolError(f"the answer from {url} was cut off ({exc}); discarded", url=url) from None

    return whole


def json_object(response: httpx.Response, limit: int | None = None) -> dict[str, Any]:
    """The body (at most `limit` bytes, default MAX_JSON_BYTES) as a JSON object, or ProtocolError naming
    what came instead."""
    read_capped(response, limit)
    try:
        body = parse_json(response.content)
    except ValueError as exc:
        if "nested" in str(exc):
            raise ProtocolError(f"the answer from {response.request.url}: {exc}", url=str(response.request.url)) from None
        body = None
    if not isinstance(body, dict):
        kind = response.headers.get("content-type", "no content type")
        raise ProtocolError(
            f"expected a JSON object from {response.request.url}, got {kind}: {response.text[:200]!r}",
            url=str(response.request.url),
        )
    return body


def _is_json_error(response: httpx.Response) -> bool:
    try:
        body = parse_json(response.content)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body


def versions_outcome(response: httpx.Response, limit: int | None = None) -> tuple[int, Any]:
    """Classify a `/versions` answer: (304, None), (405, None) for "no such route", (404, NotFound),
    or (status, (body, etag))."""
    status = response.status_code
    if status == 304:
        return 304, None
    if status in (404, 405):
        read_capped(response, limit)
        if status == 405 or not _is_json_error(response):
            return 405, None
        return 404, _map_error(response, str(response.request.url))
    return status, (json_object(response, limit), response.headers.get("ETag"))
