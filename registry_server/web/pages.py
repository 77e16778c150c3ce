"""The page handlers: negotiate, gather the page's data in a worker thread, render its template."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from registry_server import packages
from registry_server.packages import MAX_QUERY
from registry_server.state import KINDS
from registry_server.web.negotiation import not_html, wants_html
from registry_server.web.templating import render
from registry_server.web.views import NotFound, Site
from strawpot.model.kinds import KIND_ORDER, Kind

PACKAGE_PAGE_THREADS = 1
_package_pages = ThreadPoolExecutor(PACKAGE_PAGE_THREADS, thread_name_prefix="package-page")


def site(request: Request) -> Site:
    found: Site = request.app.state.site
    return found


def _page(template: str, build: Callable[[], Any], **context: Any) -> Response:
    """Blocking: build the page's data and render it, or the 404 page."""
    try:
        data = build()
    except NotFound as exc:
        return render("missing.html", 404, message=str(exc), kinds=KIND_ORDER)
    return render(template, page=data, kinds=KIND_ORDER, **context)


async def _package_page(build: Callable[[], Any], **context: Any) -> Response:
    """`_page` for a package page, on the `PACKAGE_PAGE_THREADS` thread(s) of its own.

    A README can render to megabytes of HTML (and tens of MB of Markdown tokens while it does): memory is
    bounded by how many are built at once, and by building them always on the same few threads, whose
    allocator arenas are reused instead of one arena per worker thread of the shared pool keeping its own.
    """
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_package_pages, functools.partial(_page, "package.html", build, **context))


async def home(request: Request) -> Response:
    if not wants_html(request):
        return not_html(request)
    return await run_in_threadpool(_page, "home.html", site(request).home)


async def search(request: Request) -> Response:
    """Browsers get the results page; API clients get exactly what /api/v1/search answers."""
    if not wants_html(request):
        return await packages.search(request)
    query = request.query_params.get("q") or ""
    if len(query) > MAX_QUERY:
        message = f"A search of {len(query)} characters is longer than the limit of {MAX_QUERY}."
        return render("missing.html", 400, message=message, heading="Search too long", kinds=KIND_ORDER)
    kind = _kind_param(request.query_params.get("kind"))
    try:
        page = int(request.query_params.get("page") or 1)
    except ValueError:
        page = 1
    return await run_in_threadpool(_page, "search.html", lambda: site(request).search(query, kind, page))


def _kind_param(name: str | None) -> Kind | None:
    try:
        return Kind.parse(name) if name else None
    except ValueError:
        return None


async def package(request: Request) -> Response:
    """Browsers get the package page; API clients get exactly what /api/v1/{kinds}/{slug} answers."""
    kind = KINDS.get(request.path_params["kinds"])
    if kind is None:  # `/api/v1` and the like: the router's own 404, as before the pages existed
        raise HTTPException(404)
    if not wants_html(request):
        return await packages.detail(request)
    slug, version = request.path_params["slug"], request.query_params.get("version")
    return await _package_page(
        lambda: site(request).package(kind, slug, version),
        registry_url=request.app.state.public_url,  # configured, never the Host header a client sent
    )


async def user(request: Request) -> Response:
    if not wants_html(request):
        return not_html(request)
    handle = request.path_params["name"]
    return await run_in_threadpool(_page, "user.html", lambda: site(request).user(handle))
