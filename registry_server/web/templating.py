"""Jinja2 templates (autoescaped, always), the security headers every page carries, and the static files."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from registry_server.requests import etag_matches
from strawpot.model import plural

# No inline script or style anywhere: the pages' own CSS and JS are files served from /static.
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}


@cache
def static_file(name: str) -> tuple[bytes, str, str] | None:
    """(bytes, content type, short hash) of a file shipped in `static/`, or None."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or suffix not in STATIC_TYPES:
        return None
    resource = files("registry_server.web").joinpath("static", name)
    if not resource.is_file():
        return None
    data = resource.read_bytes()
    return data, STATIC_TYPES[suffix], hashlib.sha256(data).hexdigest()[:12]


def asset(name: str) -> str:
    """The URL of a static file, versioned by its content so it can be cached for long."""
    found = static_file(name)
    return f"/static/{name}?v={found[2]}" if found else f"/static/{name}"


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("registry_server.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["asset"] = asset
    env.filters["when"] = when
    env.filters["size"] = size
    env.filters["count"] = plural.count
    env.filters["noun"] = plural.noun
    return env


def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    found = static_file(name)
    if found is None:
        return Response("not found\n", status_code=404, media_type="text/plain", headers=SECURITY_HEADERS)
    data, media_type, digest = found
    headers = {**SECURITY_HEADERS, "ETag": f'"{digest}"', "Cache-Control": "public, max-age=86400"}
    if etag_matches(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)
