"""`strawpot search` that finds nothing names the packages with a near slug ("did you mean"), in text and JSON."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot, strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests.install.conftest import FIXTURE_ORDER, FIXTURES, Registry


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("search")
    with start_registry(work / "data") as live:
        reg = Registry(live, work)
        for rel in FIXTURE_ORDER:
            reg.publish_folder(FIXTURES / rel, version="0.1.0" if rel.startswith("agents/") else None)
        yield live


def search(registry: LiveRegistry, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return strawpot_here("search", *args, "--registry", registry.url, cwd=tmp_path,
                         extra_env={"STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1", "COLUMNS": "400"})


def test_no_match_suggests_the_near_slugs(registry: LiveRegistry, tmp_path: Path) -> None:
    done = search(registry, tmp_path, "gitworkflow")
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert done.stderr == (f"No packages match 'gitworkflow' on {registry.url}; "
                           "did you mean skill git-workflow?\n")


def test_json_lists_the_suggestions(registry: LiveRegistry, tmp_path: Path) -> None:
    done = search(registry, tmp_path, "reviwer", "--json")
    document = json.loads(done.stdout)
    assert document["results"] == []
    assert document["suggestions"] == [{"kind": "role", "slug": "reviewer"}]
    kinds = json.loads(search(registry, tmp_path, "reviwer", "--kind", "skill", "--json").stdout)
    assert kinds["suggestions"] == [], "only the asked kind is suggested"


def test_a_query_near_nothing_suggests_nothing(registry: LiveRegistry, tmp_path: Path) -> None:
    done = search(registry, tmp_path, "zzqx")
    assert done.stderr == f"No packages match 'zzqx' on {registry.url}\n"
    assert json.loads(search(registry, tmp_path, "zzqx", "--json").stdout)["suggestions"] == []


def test_a_match_carries_no_suggestions(registry: LiveRegistry, tmp_path: Path) -> None:
    document = json.loads(search(registry, tmp_path, "git-workflow", "--json").stdout)
    assert document["results"][0]["slug"] == "git-workflow" and document["suggestions"] == []


def test_a_hostile_registrys_lists_suggest_only_real_slugs(tmp_path: Path) -> None:
    from tests._loopback_servers import scripted_server

    roles = {"items": [{"slug": "r" * 100_000}, {"slug": "revie\x1b[31mwer"}, {"slug": 7}, "reviewer", {"slug": "reviewer\n"}, {"slug": "reviewer"}]}
    routes = {"/api/v1/search": (200, b'{"results": [], "count": 0}'), "/api/v1/skills": (200, b'{"items": 5}'),
              "/api/v1/agents": (500, b'{"error": "boom"}'), "/api/v1/roles": (200, json.dumps(roles).encode())}
    with scripted_server(routes) as url:
        done = strawpot("search", "reviwer", "--registry", url, cwd=tmp_path, timeout=60,
                        extra_env={"STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1"})
    assert (done.returncode, done.stderr) == (0, f"No packages match 'reviwer' on {url}; did you mean role reviewer?\n")
