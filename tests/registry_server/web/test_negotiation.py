"""Browsers get pages, API clients get the JSON they got before: negotiation by the Accept header."""

from __future__ import annotations

import pytest

from registry_server.web.negotiation import prefers_html
from registry_server.web.templating import CSP
from tests.registry_server._helpers import Api, skill

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@pytest.mark.parametrize(("accept", "html"), [
    (BROWSER, True),
    ("text/html", True),
    ("application/xhtml+xml", True),
    ("text/html;q=0.9, application/json;q=0.5", True),
    (None, False),
    ("", False),
    ("*/*", False),  # httpx, curl, the strawhub client
    ("application/json", False),
    ("application/json, text/html", False),  # a tie goes to JSON
    ("text/html;q=0.5, application/json", False),
    ("text/html;q=0, */*", False),
    ("text/html;q=0.5, */*", False),
    ("text/html;q=bogus", False),
    ("TEXT/HTML", True),
])
def test_prefers_html(accept: str | None, html: bool) -> None:
    assert prefers_html(accept) is html


def test_package_path_answers_the_api_json_unless_a_browser_asks(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    for accept in (None, "*/*", "application/json"):
        headers = {"Accept": accept} if accept else {}
        page = api.client.get("/skills/git-workflow", headers=headers)
        same = api.client.get("/api/v1/skills/git-workflow", headers=headers)
        assert page.status_code == 200 and page.headers["content-type"] == "application/json"
        assert page.content == same.content
    browser = api.client.get("/skills/git-workflow", headers={"Accept": BROWSER})
    assert browser.headers["content-type"] == "text/html; charset=utf-8"
    assert browser.headers["content-security-policy"] == CSP
    assert "<code id=\"install-strawpot\">strawpot install skill git-workflow</code>" in browser.text


def test_search_path_answers_the_api_json_unless_a_browser_asks(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    page = api.client.get("/search", params={"q": "git"})
    assert page.json() == api.client.get("/api/v1/search", params={"q": "git"}).json()
    assert page.json()["results"][0]["slug"] == "git-workflow"
    assert api.client.get("/search").status_code == 400  # the API's rule: q is required
    assert api.client.get("/search", headers={"Accept": BROWSER}).status_code == 200


def test_api_paths_stay_json_for_browsers_too(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    for path in ("/api/v1/skills/git-workflow", "/api/v1/skills", "/api/v1/search?q=git"):
        response = api.client.get(path, headers={"Accept": BROWSER})
        assert response.headers["content-type"] == "application/json", path
    missing = api.client.get("/api/v1", headers={"Accept": BROWSER})
    assert missing.status_code == 404 and missing.json() == {"error": "no such endpoint: GET /api/v1"}
    unknown_kind = api.client.get("/widgets/x")
    assert unknown_kind.status_code == 404 and unknown_kind.json() == {"error": "no such endpoint: GET /widgets/x"}


def test_pages_without_a_json_form_answer_406_to_api_clients(api: Api) -> None:
    for path in ("/", "/users/alice"):
        response = api.client.get(path)
        assert response.status_code == 406, path
        assert "Accept: text/html" in response.json()["error"]
        assert api.client.get(path, headers={"Accept": BROWSER}).status_code == 200


def test_static_files_and_security_headers(api: Api) -> None:
    css = api.client.get("/static/style.css")
    js = api.client.get("/static/copy.js")
    assert css.headers["content-type"] == "text/css; charset=utf-8" and b"body" in css.content
    assert js.headers["content-type"] == "text/javascript; charset=utf-8" and b"clipboard" in js.content
    for response in (css, js, api.client.get("/", headers={"Accept": BROWSER})):
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
    again = api.client.get("/static/style.css", headers={"If-None-Match": css.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    for name in ("nope.css", "..%2Fviews.py", "views.py", "templates"):
        assert api.client.get(f"/static/{name}").status_code == 404, name
