"""Who gets a page: HTML only when the Accept header prefers text/html over JSON (a browser's does)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

HTML_TYPES = ("text/html", "application/xhtml+xml")


def _qualities(accept: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = max(0.0, min(1.0, float(value)))
                except ValueError:
                    quality = 0.0
        media = media.lower()
        if media:
            found[media] = max(quality, found.get(media, 0.0))
    return found


def prefers_html(accept: str | None) -> bool:
    """True when text/html is named explicitly and ranks above JSON (named or through a wildcard).

    `*/*` alone (httpx, curl, the strawhub client) is not a request for HTML; a browser's
    `text/html,...,*/*;q=0.8` is. A tie with an explicitly named application/json goes to JSON.
    """
    if not accept:
        return False
    q = _qualities(accept)
    html = max(q.get(t, 0.0) for t in HTML_TYPES)
    if html <= 0:
        return False
    if "application/json" in q:
        return html > q["application/json"]
    return html >= max(q.get("application/*", 0.0), q.get("*/*", 0.0))


def wants_html(request: Request) -> bool:
    return prefers_html(request.headers.get("accept"))


def not_html(request: Request) -> JSONResponse:
    """The answer to a non-browser request for a page that has no JSON form."""
    return JSONResponse(
        {"error": f"{request.url.path} is a web page: ask with Accept: text/html, or use the JSON API under /api/v1"},
        status_code=406,
    )
