"""The UI's guard: a per-launch secret (URL token -> HttpOnly cookie), a CSRF token and an Origin check for pages;
an integration's capability key for the chat adapters' API under `/i/{key}` (no cookie, no CSRF)."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from orchestrator.integration_keys import PREFIX

COOKIE = "strawpot_ui"  # the cookie's name; `cookie_name` adds the UI's port
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SAFE_METHODS = {"GET", "HEAD"}


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def cookie_name(port: int | None) -> str:
    """The secret's cookie for the UI on `port`: a browser sends a host's cookies to all its ports, so two UIs
    (each with its own secret) would otherwise overwrite each other's and log each other out (Jupyter does
    the same)."""
    return COOKIE if port is None else f"{COOKIE}_{port}"


def csrf_token(secret: str) -> str:
    """Derived from the launch secret, so a page can embed it without exposing the secret itself."""
    return hmac.new(secret.encode(), b"csrf", "sha256").hexdigest()


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


async def check(request: Request, secret: str,
                call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """403 unless the request carries the secret; state changes also need the CSRF token and our Origin. 400 for
    a NUL byte in the URL or a form field, which no page takes and no file name or argument may hold. A request
    under `/i/` needs none of these: it is the integrations' API, which `by_key` guards (and which serves nothing
    a browser page could use to skip the CSRF check of the pages)."""
    if request.url.path.startswith(PREFIX + "/"):
        if where := _nul_in_url(request):
            return _harden(_bad_request(where))
        return _harden(await call_next(request))
    token = request.query_params.get("token")
    cookie = cookie_name(request.url.port)
    if token is not None and _same(token, secret) and request.method in SAFE_METHODS:
        # Trade the URL secret for a cookie and drop it from the address bar (as Jupyter does).
        response: Response = RedirectResponse(request.url.path, status_code=303)
        response.set_cookie(cookie, secret, httponly=True, samesite="strict", path="/")
        return _harden(response)
    if not _same(request.cookies.get(cookie, ""), secret):
        return _harden(PlainTextResponse("forbidden: open the URL `strawpot ui` printed", status_code=403))
    if where := _nul_in_url(request):
        return _harden(_bad_request(where))
    if request.method not in SAFE_METHODS:
        origin = request.headers.get("origin", "")
        expected = f"{request.url.scheme}://{request.headers.get('host', '')}"
        form = await request.form()
        request.state.form = form  # the body is consumed here; handlers read the parsed form from the state
        sent = str(form.get("csrf", "")) or request.headers.get("x-csrf-token", "")
        if not origin or not _same(origin, expected) or not _same(sent, csrf_token(secret)):
            return _harden(PlainTextResponse("forbidden: missing CSRF token or foreign Origin", status_code=403))
        if where := _nul_in_form(form):
            return _harden(_bad_request(where))
    return _harden(await call_next(request))


def by_key(app: ASGIApp, integration_of: Callable[[str], str | None]) -> ASGIApp:
    """`app` (the API mounted at `/i/{key}`) for a key that names an integration, whose name it finds in
    `request.state.integration`; else a 404 (a WebSocket is refused before it opens) and nothing runs."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        name = integration_of(str(scope.get("path_params", {}).get("key", "")))
        if name is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await JSONResponse({"error": "no integration has this URL: use the STRAWPOT_API_URL strawpot gave it"},
                                   status_code=404)(scope, receive, send)
            return
        scope.setdefault("state", {})["integration"] = name
        await app(scope, receive, send)

    return guarded


def _nul_in_url(request: Request) -> str:
    """Where the URL holds a NUL byte ("" if nowhere): no run id, ask id or search has one, and a path or an
    argument that does cannot be opened or run (Python refuses it with a ValueError)."""
    if "\0" in request.url.path:
        return "the URL's path"
    return next((f"the query parameter {name!r}" for name, value in request.query_params.multi_items()
                 if "\0" in name or "\0" in value), "")


def _nul_in_form(form: FormData) -> str:
    """The form field holding a NUL byte, in its name or its text ("" if none)."""
    return next((f"the form field {name!r}" for name, value in form.multi_items()
                 if "\0" in name or (isinstance(value, str) and "\0" in value)), "")


def _bad_request(where: str) -> Response:
    return PlainTextResponse(f"bad request: {where} holds a NUL byte", status_code=400)


def _harden(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"  # "no-referrer" makes a form POST's Origin "null"
    response.headers["Cache-Control"] = "no-store"
    return response
