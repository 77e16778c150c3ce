"""`X-Content-Type-Options: nosniff` on every answer: raw package files, JSON errors and early refusals alike."""

from __future__ import annotations

from typing import Any

_NAME, _VALUE = b"x-content-type-options", b"nosniff"


class NoSniff:
    """ASGI middleware (the outermost): a browser must never guess that a package's text is HTML or script."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_nosniff(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name.lower() == _NAME for name, _ in headers):
                    message = {**message, "headers": [*headers, (_NAME, _VALUE)]}
            await send(message)

        await self.app(scope, receive, send_nosniff)
