"""Web pages for browsers on the registry's own port: home, search, package and user pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import import_module

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from registry_server.web.views import Site

__all__ = ["Site", "routes"]

Endpoint = Callable[[Request], Awaitable[Response]]


def _on_first_use(module: str, name: str) -> Endpoint:
    """The handler `module.name`, imported when a page is first asked for: the registry listens without Jinja2 and
    the page modules, which an API-only client never needs (each `registry serve` worker starts sooner)."""

    async def endpoint(request: Request) -> Response:
        handler: Endpoint = getattr(import_module(module), name)
        return await handler(request)

    endpoint.__name__ = endpoint.__qualname__ = name
    return endpoint


def routes() -> list[Route]:
    pages = "registry_server.web.pages"
    return [
        Route("/", _on_first_use(pages, "home"), methods=["GET"]),
        Route("/search", _on_first_use(pages, "search"), methods=["GET"]),
        Route("/users/{name}", _on_first_use(pages, "user"), methods=["GET"]),
        Route("/static/{name}", _on_first_use("registry_server.web.templating", "static"), methods=["GET"]),
        Route("/{kinds}/{slug}", _on_first_use(pages, "package"), methods=["GET"]),
    ]
