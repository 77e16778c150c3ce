"""Streaming multipart/form-data reader for publish: limits enforced while the body arrives.

Bounded: the boundary (70 characters, RFC 2046), the number of parts, the header bytes of each part,
each form field and the total; the body's size, deadline and rate are bounded before this reader runs
(`registry_server.limits`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from python_multipart.multipart import MultipartParser, parse_options_header

from registry_server.errors import ApiError
from strawpot.model.package import MAX_FILES

MAX_FIELD_SIZE = 1024 * 1024
MAX_PARTS = MAX_FILES + 50  # every file, the form fields, and room for validation to name the extra files
MAX_PART_HEADERS = 8 * 1024  # all header bytes of one part (python-multipart bounds each line, not the sum)
MAX_BOUNDARY = 70  # RFC 2046 §5.1.1
_BATCH_FILES = re.compile(r"[0-9]{1,4}\.files")
_PARAM_RE = re.compile(r';\s*([A-Za-z0-9*_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


@dataclass
class UploadedFile:
    """One `files` part: its name exactly as sent, its content type and its bytes."""

    name: str
    content_type: str
    form_name: str = "files"
    """The part's form name: `files`, or `<n>.files` in a batch (`registry_server.batch`)."""
    size: int = 0
    chunks: list[bytes] = field(default_factory=list)

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


@dataclass
class Upload:
    fields: dict[str, str] = field(default_factory=dict)
    files: list[UploadedFile] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)


def disposition_params(header: str) -> dict[str, str]:
    """Parameters of a Content-Disposition value: quoted strings unescaped, nothing else rewritten.

    (python-multipart's own parser strips Windows-style directories from file names, which would turn
    a name we must refuse into an innocent one.) `filename*` (RFC 5987) wins over `filename`.
    """
    params: dict[str, str] = {}
    extended: dict[str, str] = {}
    for key, raw in _PARAM_RE.findall(header):
        key, value = key.lower(), raw.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        if key.endswith("*"):
            charset, _, rest = value.partition("'")
            _, _, encoded = rest.partition("'")
            try:
                extended[key[:-1]] = unquote(encoded, encoding=charset or "utf-8", errors="strict")
            except (LookupError, UnicodeDecodeError):
                continue
        else:
            params.setdefault(key, value)
    params.update(extended)
    return params


class _Reader:
    """Collects parts through python-multipart's callback parser, counting bytes as they come."""

    def __init__(self, max_total: int, max_parts: int = MAX_PARTS, batch: bool = False) -> None:
        self.max_total = max_total
        self.max_parts = max_parts
        self.batch = batch
        self.upload = Upload()
        self.total = 0
        self._headers: dict[str, str] = {}
        self._field = self._value = b""
        self._part: UploadedFile | None = None
        self._field_name: str | None = None
        self._field_chunks: list[bytes] = []
        self._parts = 0
        self._header_bytes = 0

    def on_part_begin(self) -> None:
        self._headers, self._header_bytes = {}, 0
        self._part, self._field_name, self._field_chunks = None, None, []
        self._parts += 1
        if self._parts > self.max_parts:
            raise ApiError(413, f"more than {self.max_parts} parts in the upload (a package has at most {MAX_FILES} files)")

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._value += data[start:end]

    def _count_header(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > MAX_PART_HEADERS:
            raise ApiError(400, f"the headers of part {self._parts} are larger than {MAX_PART_HEADERS} bytes")

    def on_header_end(self) -> None:
        self._headers[self._field.decode("latin-1").lower()] = self._value.decode("utf-8", "replace")
        self._field = self._value = b""

    def on_headers_finished(self) -> None:
        disposition = self._headers.get("content-disposition", "")
        params = disposition_params(disposition)
        name = params.get("name", "")
        content_type = self._headers.get("content-type", "application/octet-stream")
        if "filename" in params:
            if name != "files" and not (self.batch and _BATCH_FILES.fullmatch(name)):
                self.upload.issues.append(f"unexpected file part {name!r} (files are sent as repeated 'files' parts)")
            self._part = UploadedFile(params["filename"], content_type, name)
            self.upload.files.append(self._part)
        else:
            self._field_name = name

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        size = end - start
        self.total += size
        if self.total > self.max_total:
            raise ApiError(413, f"upload larger than the limit of {self.max_total} bytes in all")
        if self._part is not None:
            # Every file is kept (the total is bounded): validation reports each oversized one with its size.
            self._part.size += size
            self._part.chunks.append(data[start:end])
        elif self._field_name is not None:
            self._field_chunks.append(data[start:end])
            if sum(map(len, self._field_chunks)) > MAX_FIELD_SIZE:
                raise ApiError(413, f"form field {self._field_name!r} larger than {MAX_FIELD_SIZE} bytes")

    def on_part_end(self) -> None:
        if self._field_name is not None:
            raw = b"".join(self._field_chunks)
            try:
                self.upload.fields[self._field_name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.upload.issues.append(f"form field {self._field_name!r} is not UTF-8 text")


async def read_upload(
    content_type: str, stream: AsyncIterator[bytes], *, max_total: int,
    on_large: tuple[int, Callable[[], Awaitable[None]]] | None = None, max_parts: int = MAX_PARTS,
    batch: bool = False,
) -> Upload:
    """Read a multipart body; raise ApiError 413 as soon as the total passes `max_total`.

    `on_large` = (size, wait): awaited once, before more than `size` bytes of the body are taken in.
    `batch`: file parts may also be named `<n>.files` (several packages in one body, `POST /batch`).
    """
    mime, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if mime == b"application/x-www-form-urlencoded":  # fields only: what a client sends when it has no files
        return await _read_form(stream)
    if mime != b"multipart/form-data" or not boundary:
        raise ApiError(400, "publish expects multipart/form-data with a boundary")
    if len(boundary) > MAX_BOUNDARY:
        raise ApiError(400, f"multipart boundary of {len(boundary)} characters; RFC 2046 allows at most {MAX_BOUNDARY}")
    reader = _Reader(max_total, max_parts, batch)
    callbacks = {
        name: getattr(reader, name)
        for name in (
            "on_part_begin", "on_header_field", "on_header_value", "on_header_end",
            "on_headers_finished", "on_part_data", "on_part_end",
        )
    }
    parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
    taken = 0
    try:
        async for chunk in stream:
            taken += len(chunk)
            if on_large is not None and taken > on_large[0]:
                await on_large[1]()
                on_large = None
            if chunk:
                parser.write(chunk)
        parser.finalize()
    except ApiError:
        raise
    except Exception as exc:  # python-multipart raises its own errors and ValueError on malformed bodies
        raise ApiError(400, f"malformed multipart body: {exc}") from None
    return reader.upload


async def _read_form(stream: AsyncIterator[bytes]) -> Upload:
    from urllib.parse import parse_qsl

    raw = b""
    async for chunk in stream:
        raw += chunk
        if len(raw) > MAX_FIELD_SIZE:
            raise ApiError(413, f"form larger than {MAX_FIELD_SIZE} bytes")
    try:
        return Upload(fields=dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True)))
    except UnicodeDecodeError:
        raise ApiError(400, "form fields are not UTF-8 text") from None
