"""Web pages for browsers on the registry's own port: home, search, package and user pages."""

from __future__ import annotations

from starlette.routing import Route

from registry_server.web import pages
from registry_server.web.templating import static
from registry_server.web.views import Site

__all__ = ["Site", "routes"]


def routes() -> list[Route]:
    return [
        Route("/", pages.home, methods=["GET"]),
        Route("/search", pages.search, methods=["GET"]),
        Route("/users/{name}", pages.user, methods=["GET"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/{kinds}/{slug}", pages.package, methods=["GET"]),
    ]
