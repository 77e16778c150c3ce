"""What the pages show, through the app in-process: lists, pagination, package details, 404s, escaping."""

from __future__ import annotations

import re

from registry_server.web.views import PAGE_SIZE
from tests.registry_server._helpers import Api, agent, main_md, role, skill

BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def page(api: Api, path: str, status: int = 200) -> str:
    response = api.client.get(path, headers=BROWSER)
    assert response.status_code == status, (path, response.text[:500])
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return response.text


def test_home_counts_kinds_and_lists_recent_and_popular(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    api.ok("skill", skill("code-review"))
    api.ok("role", role("reviewer", skills=["code-review"]))
    api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "git-workflow", "version": "1.0.0"})
    html = page(api, "/")
    assert "<strong>2</strong> skills" in html and "<strong>1</strong> role<" in html
    assert "<strong>0</strong> agents" in html
    recent, popular = html.split("Most downloaded")
    assert recent.index("/roles/reviewer") < recent.index("/skills/code-review")  # newest first
    assert popular.index("/skills/git-workflow") < popular.index("/skills/code-review")
    assert "1 download<" in popular


def test_search_filters_by_kind_and_paginates(api: Api) -> None:
    for i in range(PAGE_SIZE + 3):
        api.ok("skill", skill(f"lint-{i:02d}", description=f"Lint rule number {i}."))
    api.ok("role", role("linter", skills=["lint-00"], description="Runs the lint rules."))
    first = page(api, "/search?q=lint")
    assert f"{PAGE_SIZE + 4} packages" in first and "page 1 of 2" in first
    assert first.count('class="name"') == PAGE_SIZE
    assert 'rel="next" href="/search?q=lint&amp;page=2"' in first
    second = page(api, "/search?q=lint&page=2")
    assert second.count('class="name"') == 4 and "page 2 of 2" in second and 'rel="prev"' in second
    roles = page(api, "/search?q=lint&kind=role")
    assert "1 package<" in roles and "/roles/linter" in roles and "/skills/lint-00" not in roles
    assert "page 2 of 2" in page(api, "/search?q=lint&page=99")  # clamped, not an error
    assert page(api, "/search?q=lint&page=x").count('class="name"') == PAGE_SIZE
    assert "No package matches." in page(api, "/search?q=zzzz")
    everything = page(api, "/search")
    assert "All packages" in everything and f"{PAGE_SIZE + 4} packages" in everything


def test_package_page_shows_versions_dependencies_used_by_and_files(api: Api) -> None:
    api.ok("skill", skill("diff-reading"))
    api.ok("skill", skill("diff-reading", "1.1.0"))
    api.ok("skill", skill("code-review", deps=["diff-reading==1.0.0"], body="# Code review\n\nRead the **diff**.\n"))
    api.ok("role", role("reviewer", skills=["code-review"]))
    done = api.client.post("/api/v1/skills/diff-reading/versions/1.1.0/yank", json={}, headers=api.auth(api.alice))
    assert done.status_code == 200
    html = page(api, "/skills/code-review")
    assert "<h1>Code review</h1>" in html and "<strong>diff</strong>" in html
    assert re.search(r'<a href="/skills/diff-reading">diff-reading</a>\s*<code>==1.0.0</code>', html)
    assert '<a href="/roles/reviewer">reviewer</a>' in html.split("Used by")[1]
    assert 'href="/api/v1/skills/code-review/file?path=SKILL.md&amp;version=1.0.0"' in html
    assert '<a href="/users/alice">@alice</a>' in html
    dep = page(api, "/skills/diff-reading")
    assert re.search(r'1\.1\.0</a>\s*<time>\d{4}-\d\d-\d\d</time> <span class="yanked">yanked</span>', dep)
    assert '<h1>diff-reading <span class="version">1.0.0</span></h1>' in dep  # the latest skips the yanked
    assert "/skills/code-review" in dep.split("Used by")[1]
    pinned = page(api, "/skills/diff-reading?version=1.1.0")
    assert "Version 1.1.0 is yanked" in pinned
    assert "strawpot install skill diff-reading==1.1.0" in pinned
    assert "strawhub install skill diff-reading --version 1.1.0" in pinned


def test_used_by_follows_new_publishes(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    assert "No package depends on it." in page(api, "/skills/git-workflow")
    api.ok("role", role("shipper", skills=["git-workflow"]))
    assert '<a href="/roles/shipper">shipper</a>' in page(api, "/skills/git-workflow")


def test_agent_page_shows_tools_params_and_env(api: Api) -> None:
    files = agent("runner")
    strawpot = {
        "bin": {"linux": "bin/wrapper"},
        "tools": {"git": {"description": "Git", "install": {"linux": "apt-get install git"}}},
        "params": {"model": {"default": "fast", "description": "which model"}},
        "env": {"RUNNER_TOKEN": {"required": True, "description": "API token"}},
    }
    files["AGENT.md"] = main_md("runner", strawpot=strawpot, body="# Runner\n")
    api.ok("agent", files)
    html = page(api, "/agents/runner")
    assert re.search(r"<code>git</code></td><td>Git</td>\s*<td><div><span class=\"os\">linux</span> "
                     r"<code>apt-get install git</code>", html)
    assert "<td><code>model</code></td><td>string</td><td><code>fast</code></td><td>which model</td>" in html
    assert re.search(r"<code>RUNNER_TOKEN</code></td><td>yes</td>\s*<td></td><td>API token</td>", html)
    assert "bin/wrapper</a>" in html and "executable" in html


def test_missing_things_get_a_404_page(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    assert "There is no skill named &#39;nope&#39;" in page(api, "/skills/nope", 404)
    assert "has no version &#39;9.9.9&#39;" in page(api, "/skills/git-workflow?version=9.9.9", 404)
    assert "There is no user named &#39;nobody&#39;" in page(api, "/users/nobody", 404)


def test_user_page_lists_what_they_published(api: Api) -> None:
    api.ok("skill", skill("git-workflow"))
    api.ok("skill", skill("code-style"), token="bob")
    html = page(api, "/users/alice")
    assert "/skills/git-workflow" in html and "/skills/code-style" not in html and "1 package published" in html


def test_package_text_is_escaped_everywhere(api: Api) -> None:
    hostile = '<script>alert("x")</script>'
    api.ok("skill", skill("sneaky", description=f"Sneaky {hostile}", body=f"{hostile}\n\n[x](javascript:alert(3))\n"))
    for html in (page(api, "/skills/sneaky"), page(api, "/search?q=sneaky"), page(api, "/"),
                 page(api, f"/search?q={hostile}")):
        assert "<script>alert" not in html
        assert 'href="javascript:' not in html
        assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/copy.js?v=' + html.split("copy.js?v=")[1][:12]
                                                       + '" defer>']


def test_a_huge_body_is_shown_truncated(api: Api) -> None:
    from registry_server.web.mainfile import MAX_RENDERED

    api.ok("skill", skill("long-read", body="word " * (MAX_RENDERED // 5 + 1000) + "\n\nTHE-END\n"))
    html = page(api, "/skills/long-read")
    assert "Only the first 256 KB of the text are shown" in html and "THE-END" not in html


def test_listing_counts_are_at_most_ttl_old_and_a_publish_shows_at_once(api: Api) -> None:
    from registry_server.web.catalogue import LISTING_TTL, Catalogue

    now = [0.0]
    site = api.client.app.state.site  # type: ignore[attr-defined]
    site.catalogue = Catalogue(site.reg, clock=lambda: now[0])
    api.ok("skill", skill("git-workflow"))
    assert "0 downloads" in page(api, "/")
    api.client.post("/api/v1/downloads", json={"kind": "skill", "slug": "git-workflow", "version": "1.0.0"})
    assert "0 downloads" in page(api, "/")  # the cached listing
    now[0] += LISTING_TTL
    assert "1 download<" in page(api, "/")
    api.ok("skill", skill("code-style"))
    assert "/skills/code-style" in page(api, "/")  # a change is seen without waiting
