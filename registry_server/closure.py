"""`POST /closure`: the `versions` documents of every package reachable from given roots, in one answer.

Reachable means through any version (yanked ones included) of a package already reached: its v1
dependency lists (`strawpot.model.dependencies.read_edges`, the one reading) and a role's
`default_agent`. Documents whose ETag the client names in `known` are listed as unchanged, without a
body. At most `MAX_CLOSURE` packages are visited; past it the answer says `"complete": false` and the
client asks for the rest one package at a time. Reads go through `VersionsCache`, so any storage works.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from registry_server.cache import VersionsCache
from registry_server.errors import ApiError
from registry_server.requests import json_body
from registry_server.state import body_kind, registry
from strawpot.model.dependencies import read_edges
from strawpot.model.ids import package_id
from strawpot.model.kinds import Kind
from strawpot.model.package import slug_error

MAX_CLOSURE = 1000  # packages visited for one request (documented in docs/registry-api.md)
MAX_ROOTS = 100


def _roots(raw: object) -> list[tuple[Kind, str]]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_ROOTS:
        raise ApiError(400, f"'roots' must be a list of 1 to {MAX_ROOTS} objects {{\"kind\", \"slug\"}}")
    roots = []
    for item in raw:
        if not isinstance(item, dict):
            raise ApiError(400, "each of 'roots' must be an object {\"kind\", \"slug\"}")
        slug = item.get("slug")
        if not isinstance(slug, str) or (problem := slug_error(slug)) is not None:
            raise ApiError(400, f"roots: invalid slug {str(slug)[:80]!r}: {problem if isinstance(slug, str) else 'not a string'}")
        roots.append((body_kind(item.get("kind")), slug))
    return roots


def _known(raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ApiError(400, "'known' must be an object {\"kind:slug\": etag}")
    return raw


def _neighbours(kind: Kind, records: Any) -> list[tuple[Kind, str]]:
    """Every package any version of this package depends on (and a role's default agents)."""
    out: dict[tuple[Kind, str], None] = {}
    for record in records:
        for edge in read_edges(kind, record.dependencies).edges:
            out[(edge.kind, edge.name)] = None
        if kind is Kind.ROLE and record.default_agent and slug_error(record.default_agent) is None:
            out[(Kind.AGENT, record.default_agent)] = None
    return list(out)


def closure_body(cache: VersionsCache, roots: list[tuple[Kind, str]], known: dict[str, str], limit: int) -> bytes:
    """Blocking: walk the graph breadth first and render the answer (cached bodies spliced in as bytes)."""
    queue = deque(dict.fromkeys(roots))
    seen = set(queue)
    parts: list[bytes] = []
    unchanged: list[str] = []
    missing: list[str] = []
    visited = 0
    while queue and visited < limit:
        kind, slug = queue.popleft()
        visited += 1
        pid = package_id(kind, slug)
        entry = cache.load(kind, slug)
        if entry is None:
            missing.append(pid)
            continue
        if known.get(pid) == entry.etag:
            unchanged.append(pid)
        else:
            parts.append(b'{"etag":' + json.dumps(entry.etag).encode() + b',"versions":' + entry.body + b"}")
        for key in _neighbours(kind, entry.records):
            if key not in seen:
                seen.add(key)
                queue.append(key)
    tail = {"unchanged": unchanged, "missing": missing, "complete": not queue, "limit": limit}
    return b'{"packages":[' + b",".join(parts) + b"]," + json.dumps(tail, separators=(",", ":")).encode()[1:]


async def closure(request: Request) -> Response:
    body = await json_body(request)
    roots, known = _roots(body.get("roots")), _known(body.get("known"))
    limit: int = request.app.state.closure_limit
    data = await run_in_threadpool(closure_body, registry(request).versions, roots, known, limit)
    return Response(data, media_type="application/json", headers={"Cache-Control": "no-store"})
