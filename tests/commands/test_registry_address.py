"""A registry URL that is not a registry's root says so in one line; `.../api/v1` is read as the root it names.

Before, `--registry http://host/typo` looked like a missing package ("skill x was not found on the registry"),
and `http://host/api/v1` was written into strawpot.lock as the packages' source.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from strawpot.model.lockfile import Lockfile
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests._loopback_servers import scripted_server

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "fixtures" / "skills" / "git-workflow"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    base = tmp_path_factory.mktemp("registry")
    with start_registry(base) as registry:
        published = strawpot_here("publish", SKILL, cwd=base, extra_env=_env(base, registry.url, registry.token))
        assert published.returncode == 0, published.stderr
        yield registry


def _env(base: Path, url: str, token: str = "") -> dict[str, str]:
    return {"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": token, "STRAWPOT_TOKEN_REGISTRY": "",
            "STRAWPOT_CONFIG_DIR": str(base / "config"), "STRAWPOT_CACHE_DIR": str(base / "cache")}


@pytest.mark.parametrize("suffix", ["/api/v1", "/api/v1/"])
def test_an_api_url_is_read_as_the_registry_root(tmp_path: Path, live: LiveRegistry, suffix: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    result = strawpot_here("install", "skill", "git-workflow", cwd=project, extra_env=_env(tmp_path, live.url + suffix))
    assert result.returncode == 0, result.stderr
    assert [p.source for p in Lockfile.load(project / "strawpot.lock").packages] == [live.url]


@pytest.mark.parametrize("args", [
    ("install", "skill", "git-workflow"),
    ("info", "skill", "git-workflow"),
    ("whoami",),
    ("yank", "skill", "git-workflow", "1.0.0"),
    ("publish", str(SKILL)),
], ids=lambda args: args[0])
def test_a_url_that_is_not_a_registry_root_says_so(tmp_path: Path, live: LiveRegistry, args: tuple[str, ...]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    wrong = f"{live.url}/typo"
    result = strawpot_here(*args, cwd=project, extra_env=_env(tmp_path, wrong, live.token))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("error:"))  # after install's "Resolving ..."
    assert lines[at:] == [f"error: {wrong} is not a StrawHub registry: GET {wrong}/api/v1/skills answers 404",
                          "hint: name the registry's root, the address of its web pages (e.g. http://127.0.0.1:8787, "
                          "with no path after it), with --registry, STRAWPOT_REGISTRY_URL or [registry] url"]
    assert "not found" not in result.stderr
    assert not (project / "strawpot.lock").exists()


def test_a_web_page_where_the_api_should_be_says_so(tmp_path: Path) -> None:
    """Some other web server (it answers a page, not the API's JSON) is not taken for a registry without the package."""
    page = b"<!doctype html><html><body>Welcome</body></html>"
    with scripted_server({"/api/v1/skills": (200, page)}) as url:
        project = tmp_path / "project"
        project.mkdir()
        result = strawpot_here("info", "skill", "git-workflow", cwd=project, extra_env=_env(tmp_path, url))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"error: {url} is not a StrawHub registry: GET {url}/api/v1/skills does not answer with the registry API's JSON")
