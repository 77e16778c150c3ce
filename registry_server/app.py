"""`create_app(storage)`: the Starlette application serving StrawHub API v1 and our extensions."""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from registry_server import (
    account,
    advisories,
    batch,
    bundle,
    closure,
    keys,
    packages,
    publish,
    resolve,
    transparency,
    web,
)
from registry_server.budget import ARCHIVES_BUDGET
from registry_server.closure import MAX_CLOSURE
from registry_server.errors import ApiError, error_response
from registry_server.fresh import FreshReads
from registry_server.hot import HotPaths
from registry_server.limits import BodyPolicy, RequestLimits
from registry_server.mirror.middleware import MirrorRequests
from registry_server.mirror.storage import MirrorStorage
from registry_server.nosniff import NoSniff
from registry_server.openapi import openapi_document
from registry_server.ratelimit import DEFAULT_RATE, RateLimit
from registry_server.slots import LARGE_BUDGET, WAIT
from registry_server.state import Registry
from registry_server.storage.base import Storage

log = logging.getLogger("registry_server")
API = "/api/v1"


def _openapi(request: Request) -> JSONResponse:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("strawpot")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        release = "0"
    return JSONResponse(openapi_document(release))


def _routes(with_closure: bool) -> list[Route]:
    kinds, pkg = f"{API}/{{kinds}}", f"{API}/{{kinds}}/{{slug}}"
    extra = [
        Route(f"{API}/closure", closure.closure, methods=["POST"]),
        Route(f"{API}/archives", bundle.archives, methods=["POST"]),
    ] if with_closure else []
    return [
        *extra,
        Route(f"{API}/openapi.json", _openapi, methods=["GET"]),
        Route(f"{API}/advisories", advisories.advisories, methods=["GET"]),
        Route(f"{API}/batch", batch.batch, methods=["POST"]),
        Route(f"{API}/search", packages.search, methods=["GET"]),
        Route(f"{API}/whoami", account.whoami, methods=["GET"]),
        Route(f"{API}/downloads", packages.downloads, methods=["POST"]),
        Route(f"{API}/stars/toggle", account.toggle_star, methods=["POST"]),
        Route(f"{API}/admin/set-role", account.set_role, methods=["POST"]),
        Route(f"{API}/admin/ban-user", account.ban_user, methods=["POST"]),
        Route(f"{API}/keys", keys.register, methods=["POST"]),
        Route(f"{API}/keys/revoke", keys.revoke, methods=["POST"]),
        Route(f"{API}/users/{{handle}}/keys", keys.list_keys, methods=["GET"]),
        Route(f"{API}/log/head", transparency.head, methods=["GET"]),
        Route(f"{API}/log/entries", transparency.entries, methods=["GET"]),
        Route(f"{API}/log/proof/inclusion", transparency.inclusion, methods=["GET"]),
        Route(f"{API}/log/proof/consistency", transparency.consistency, methods=["GET"]),
        Route(f"{API}/log/proofs", transparency.proofs, methods=["POST"]),
        Route(kinds, packages.list_packages, methods=["GET"]),
        Route(kinds, publish.publish, methods=["POST"]),
        Route(pkg, packages.detail, methods=["GET"]),
        Route(pkg, account.delete, methods=["DELETE"]),
        Route(f"{pkg}/file", packages.file, methods=["GET"]),
        Route(f"{pkg}/resolve", resolve.resolve, methods=["GET"]),
        Route(f"{pkg}/versions", packages.versions, methods=["GET"]),
        Route(f"{pkg}/versions/{{version}}/archive", packages.archive, methods=["GET"]),
        Route(f"{pkg}/versions/{{version}}/yank", account.yank, methods=["POST"]),
        *web.routes(),
    ]


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return exc.response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(404, f"no such endpoint: {request.method} {request.url.path}")
    if exc.status_code == 405:
        return error_response(405, f"method {request.method} not allowed on {request.url.path}", exc.headers)
    return error_response(exc.status_code, str(exc.detail), exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal server error", {"X-Content-Type-Options": "nosniff"})  # outside NoSniff


def create_app(
    storage: Storage,
    *,
    rate_limit: float = DEFAULT_RATE,
    burst: float | None = None,
    body_policy: BodyPolicy | None = None,
    slot_wait: float = WAIT,
    upload_budget: int = LARGE_BUDGET,
    archives_budget: int = ARCHIVES_BUDGET,
    fast_path: bool = True,
    closure: bool = True,
    closure_limit: int = MAX_CLOSURE,
    public_url: str | None = None,
    allow_ranges: bool = False,
    require_signatures: bool = False,
) -> Starlette:
    """The registry as an ASGI app over `storage`; `rate_limit` requests/s per client address (0 = off).

    `body_policy` bounds every request body (size, deadline, minimum rate); `upload_budget` is the memory
    (bytes) that large uploads share, `archives_budget` the archive bytes all `POST /archives` answers in
    flight may still have to send (`registry_server.budget`), and `slot_wait` how long a publish waits for its share before a 503.
    `fast_path=False` leaves out `HotPaths`, so every request goes through the router (the tests that
    prove the fast path answers what the handlers answer compare the two). `closure=False` leaves out
    `POST /closure` and `POST /archives` (a registry without the extension, for the client's fallback tests); `closure_limit`
    is the most packages one closure answer visits. `public_url` is the address the pages name in their install
    hints (never taken from a request's Host header); None leaves the hint out. `allow_ranges` lets a publish carry
    dependency ranges, which StrawHub's grammar (`slug`, `slug==X.Y.Z`, `*`) refuses.
    `require_signatures` refuses publishes without a signed statement.
    """
    middleware = [  # outermost first: every early answer, a 429 included, passes the request limits' close
        Middleware(NoSniff),
        Middleware(RequestLimits, policy=body_policy),
        Middleware(RateLimit, rate=rate_limit, burst=burst),
        Middleware(FreshReads),  # before any cache is read: drop them if another process changed the registry
    ]
    if isinstance(storage, MirrorStorage):  # `registry serve --upstream`: loops refused, TTLs, the stale mark
        middleware.append(Middleware(MirrorRequests))
    if fast_path:
        middleware.append(Middleware(HotPaths))
    app = Starlette(
        routes=_routes(closure),
        middleware=middleware,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _crash},
    )
    app.router.redirect_slashes = False
    app.state.registry = Registry(storage, slot_wait=slot_wait, upload_budget=upload_budget,
                                  archives_budget=archives_budget, allow_ranges=allow_ranges,
                                  require_signatures=require_signatures)
    if isinstance(storage, MirrorStorage):
        storage.forget_cached = app.state.registry.changed
    app.state.site = web.Site(app.state.registry)
    app.state.closure_limit = closure_limit
    app.state.public_url = public_url.rstrip("/") if public_url else None
    return app
