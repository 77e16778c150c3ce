"""A mirror answers for its upstreams' transparency logs and publisher keys (`log=URL`, the URL a mirrored version's
`log` names), so clients check the statements of versions served from upstream against upstream's own log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from hub_client import HubClient, HubError, NotFound, ServerError
from registry_server.errors import ApiError
from registry_server.state import registry

Call = Callable[[HubClient, "str | None"], dict[str, Any]]


def _ask(clients: list[tuple[str, HubClient]], log: str, call: Call) -> dict[str, Any]:
    """The upstream at `log` answers; else each upstream in order is asked for `log` (a mirror of a mirror)."""
    for url, client in clients:
        if url == log:
            return call(client, None)
    failure: HubError | None = None
    for _, client in clients:
        try:
            return call(client, log)
        except HubError as exc:
            failure = exc
    raise failure or ApiError(400, "this registry has no upstream")


async def forwarded(request: Request, log: str, call: Call) -> JSONResponse:
    """Upstream's answer to `call`, verbatim (the client checks it: heads are signed, proofs prove)."""
    from registry_server.mirror.storage import MirrorStorage

    storage = registry(request).storage
    if not isinstance(storage, MirrorStorage):
        raise ApiError(400, "log: this registry mirrors no upstream; ask without log")
    upstream = storage.upstream
    try:
        answer = await run_in_threadpool(_ask, list(zip(upstream.urls, upstream.clients, strict=True)), log, call)
    except NotFound as exc:
        raise ApiError(404, f"upstream: {exc.message}") from None
    except ServerError as exc:
        raise ApiError(exc.status if 400 <= exc.status < 500 else 502, f"upstream: {exc.message}") from None
    except HubError as exc:
        raise ApiError(502, f"upstream log {log}: {exc}") from None
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})
