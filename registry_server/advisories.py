"""`GET /api/v1/advisories[?kind=&slug=]`: the security advisories an admin added (`strawpot registry advisory add`)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.errors import ApiError
from registry_server.state import body_kind, registry
from strawpot.model.package import slug_error

FORMAT = 1  # the version of this answer's shape; a key renamed or removed bumps it


async def advisories(request: Request) -> JSONResponse:
    """Every advisory, oldest first, of one kind and/or one slug when asked (a bad filter is a 400)."""
    query = request.query_params
    kind = body_kind(query["kind"]) if query.get("kind") else None
    slug = query.get("slug") or None
    if slug is not None and (err := slug_error(slug)):
        raise ApiError(400, f"slug: {err}")
    found = await run_in_threadpool(registry(request).storage.advisories, kind, slug)
    return JSONResponse({"format": FORMAT, "advisories": [a.to_json() for a in found]},
                        headers={"Cache-Control": "no-cache"})
