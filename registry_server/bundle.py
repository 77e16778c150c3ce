"""`POST /archives`: many versions' archives in one answer (one round trip instead of one per package).

The body is `{"items": [{"kind", "slug", "version"}, ...]}` (at most `MAX_ITEMS`). The answer is one line
of JSON, the index `[{"kind", "slug", "version", "sha256", "size"}, ...]` of the archives that follow,
then their bytes back to back in that order. Unknown items are left out of the index, and so is
everything past `MAX_BUNDLE_BYTES`; the client fetches what is missing one archive at a time. Each
archive sent counts one download, as `GET .../archive` does.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from registry_server.errors import ApiError
from registry_server.requests import json_body
from registry_server.state import Registry, body_kind, registry
from strawpot.model.kinds import Kind
from strawpot.model.package import slug_error

MAX_ITEMS = 200
MAX_BUNDLE_BYTES = 64 * 1024 * 1024


def _items(raw: object) -> list[tuple[Kind, str, str]]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_ITEMS:
        raise ApiError(400, f"'items' must be a list of 1 to {MAX_ITEMS} objects {{\"kind\", \"slug\", \"version\"}}")
    items = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("slug"), str) or not isinstance(item.get("version"), str):
            raise ApiError(400, "each of 'items' must be an object {\"kind\", \"slug\", \"version\"} of strings")
        if (problem := slug_error(item["slug"])) is not None:
            raise ApiError(400, f"items: {problem}")
        items.append((body_kind(item.get("kind")), item["slug"], item["version"]))
    return items


def bundle_body(reg: Registry, items: list[tuple[Kind, str, str]]) -> bytes:
    """Blocking: the index line and the archives' bytes; counts one download per archive sent."""
    index: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    total = 0
    for kind, slug, version in dict.fromkeys(items):
        entry = reg.versions.load(kind, slug)
        record = entry.by_version.get(version) if entry else None
        if record is None or total + record.archive_size > MAX_BUNDLE_BYTES:
            continue
        data = reg.blobs.load(record.archive_sha256)
        if data is None:
            continue
        total += len(data)
        index.append({"kind": kind.value, "slug": slug, "version": version,
                      "sha256": record.archive_sha256, "size": len(data)})
        blobs.append(data)
        reg.downloads.add(kind, slug)
    return json.dumps(index, separators=(",", ":")).encode() + b"\n" + b"".join(blobs)


async def archives(request: Request) -> Response:
    items = _items((await json_body(request)).get("items"))
    data = await run_in_threadpool(bundle_body, registry(request), items)
    return Response(data, media_type="application/octet-stream", headers={"Cache-Control": "no-store"})
