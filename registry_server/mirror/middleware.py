"""ASGI middleware of a mirror: refuse a request that already passed this mirror (a loop), drop what the app keeps
in memory of mirrored packages past their TTL, mark an answer served from the cache, and answer an upstream that
failed with nothing cached as one JSON line (503 with Retry-After, or 502 for an answer refused)."""

from __future__ import annotations

from typing import Any

from registry_server.errors import error_response
from registry_server.mirror.failures import UpstreamUnavailable
from registry_server.mirror.hops import CURRENT, HOPS_HEADER, MAX_HOPS, STATUS_HEADER, RequestNote, parse_hops
from registry_server.mirror.storage import RETRY_AFTER, MirrorStorage

_HOPS = HOPS_HEADER.lower().encode()
_STALE = (STATUS_HEADER.lower().encode(), b"stale")


class MirrorRequests:
    """Needs `scope["app"].state.registry.storage` to be a MirrorStorage."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        mirror: MirrorStorage = scope["app"].state.registry.storage
        hops = next((parse_hops(v.decode("latin-1")) for k, v in scope["headers"] if k == _HOPS), ())
        if mirror.hop_id in hops or len(hops) >= MAX_HOPS:
            answer = error_response(508, f"mirror loop: this request already passed this registry (hops: "
                                         f"{', '.join(hops)}); its --upstream leads back to itself")
            await answer(scope, receive, send)
            return
        mirror.expire()
        note = RequestNote((*hops, mirror.hop_id))
        token = CURRENT.set(note)
        started = False

        async def send_noted(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if note.stale:
                    message = {**message, "headers": [*message.get("headers", []), _STALE]}
            await send(message)

        try:
            await self.app(scope, receive, send_noted)
        except UpstreamUnavailable as exc:
            if started:
                raise
            if exc.refused:
                answer = error_response(502, str(exc))
            else:
                answer = error_response(503, f"{exc}; nothing cached yet, retry shortly",
                                        {"Retry-After": str(RETRY_AFTER)})
            await answer(scope, receive, send)
        finally:
            CURRENT.reset(token)
