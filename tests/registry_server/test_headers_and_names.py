"""`nosniff` on every answer, the pages' URL from configuration (never Host), a bound on search queries, and the
owner's handle beside every display name."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from registry_server import MemoryStorage
from registry_server.packages import MAX_QUERY
from tests._cli import strawpot
from tests._live_registry import start_registry
from tests.registry_server._helpers import Api, skill
from tests.registry_server.conftest import make_api
from tests.registry_server.web.test_pages import BROWSER, page

FORGED = {**BROWSER, "Host": "evil.example"}


def test_every_answer_says_nosniff(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    answers = {
        "raw file (fast path)": api.client.get("/api/v1/skills/git-workflow/file?path=SKILL.md&version=1.0.0"),
        "raw file (handler)": api.client.get("/api/v1/skills/git-workflow/file"),
        "archive": api.client.get("/api/v1/skills/git-workflow/versions/1.0.0/archive"),
        "JSON 404, no package": api.client.get("/api/v1/skills/nope"),
        "JSON 404, no endpoint": api.client.get("/api/v1/nothing/here/at/all"),
        "JSON 404, no file": api.client.get("/api/v1/skills/git-workflow/file?path=nope.md"),
        "JSON 400": api.client.get("/api/v1/search"),
        "405": api.client.put("/api/v1/skills"),
        "413 before the body": api.client.post("/api/v1/downloads", content=b"x" * 70_000),
        "page": api.client.get("/skills/git-workflow", headers=BROWSER),
        "404 page": api.client.get("/skills/nope", headers=BROWSER),
    }
    missing = [name for name, answer in answers.items() if answer.headers.get("x-content-type-options") != "nosniff"]
    assert missing == []
    assert answers["page"].headers.get_list("x-content-type-options") == ["nosniff"]  # not twice


def test_a_forged_host_never_reaches_the_page(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    html = page(api, "/skills/git-workflow")
    forged = api.client.get("/skills/git-workflow", headers=FORGED)
    assert forged.status_code == 200 and "evil.example" not in forged.text
    assert "STRAWPOT_REGISTRY_URL" not in html  # no public URL configured: no hint rather than a guessed one


def test_the_pages_name_the_configured_public_url() -> None:
    configured = make_api(MemoryStorage())
    configured.client.app.state.public_url = "https://hub.example.org"  # type: ignore[attr-defined]
    with configured.client:
        configured.ok("skill", skill("git-workflow"))
        html = configured.client.get("/skills/git-workflow", headers=FORGED).text
    assert "STRAWPOT_REGISTRY_URL=https://hub.example.org</code>" in html and "evil.example" not in html


def test_serve_takes_public_url_from_the_flag(tmp_path: Path) -> None:
    with start_registry(tmp_path, serve_args=["--public-url", "https://hub.example.org/"]) as reg:
        files = [("files", ("SKILL.md", skill("git-workflow")["SKILL.md"], "text/markdown"))]
        done = httpx.post(f"{reg.url}/api/v1/skills", data={"slug": "git-workflow", "version": "1.0.0"}, files=files,
                          headers={"Authorization": f"Bearer {reg.token}"})
        assert done.status_code == 201, done.text
        html = httpx.get(f"{reg.url}/skills/git-workflow", headers=FORGED).text
    assert "STRAWPOT_REGISTRY_URL=https://hub.example.org</code>" in html and "evil.example" not in html


def test_serve_refuses_a_public_url_that_is_not_http(tmp_path: Path) -> None:

    done = strawpot("registry", "serve", "--port", "0", "--data", tmp_path, "--public-url", "javascript:alert(1)",
                    cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "is not an http(s)://HOST[:PORT][/PATH] address" in done.stderr


@pytest.mark.parametrize("path", ["/api/v1/search", "/search"])
def test_a_search_over_256_characters_is_a_400(api: Api, path: str) -> None:
    api.ok("skill", skill("git-workflow"))
    headers = BROWSER if path == "/search" else {}
    assert api.client.get(path, params={"q": "git " + "w" * (MAX_QUERY - 4)}, headers=headers).status_code == 200
    long = api.client.get(path, params={"q": "g" * (15 * 1024)}, headers=headers)
    assert long.status_code == 400
    assert "15360 characters" in long.text and f"{MAX_QUERY}" in long.text


def test_lists_show_the_owners_handle_beside_the_display_name(api: Api) -> None:
    api.ok("skill", skill("git-workflow"), token="alice")
    api.ok("skill", skill("git-workflow-pro"), token="bob", displayName="git-workflow by alice")
    for html in (page(api, "/"), page(api, "/search?q=git")):
        item = html.split('href="/skills/git-workflow-pro"')[1].split("</li>")[0]
        assert '<span class="slug">git-workflow-pro</span>' in item
        assert '<span class="owner">by <a href="/users/bob">@bob</a></span>' in item
