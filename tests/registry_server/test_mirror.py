"""`registry serve --upstream URL`: two real registries on loopback, one in front of the other (issue 41).

Local names first and never shadowed, upstream's packages cached (metadata for the TTL, archives for good) and
served when upstream is down, bytes and hashes unchanged, a loop refused.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from strawpot.model.lockfile import Lockfile
from tests._cli import strawpot
from tests._live_registry import LiveRegistry, start_registry, stop_server

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "fixtures" / "skills"


def env(base: Path, url: str, token: str = "") -> dict[str, str]:
    return {"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": token, "STRAWPOT_TOKEN_REGISTRY": "",
            "STRAWPOT_CONFIG_DIR": str(base / "config"), "STRAWPOT_CACHE_DIR": str(base / "cache")}


def publish(base: Path, registry: LiveRegistry, folder: Path, *, expect: int = 0) -> str:
    done = strawpot("publish", folder, cwd=base, extra_env=env(base, registry.url, registry.token))
    assert done.returncode == expect, done.stderr
    return done.stderr


def variant(base: Path, skill: str, version: str, words: str) -> Path:
    """A copy of a fixture skill at another version, with other words in it (so its sha256 differs)."""
    folder = base / f"{skill}-{version}-{hashlib.sha256(words.encode()).hexdigest()[:6]}"
    shutil.copytree(SKILLS / skill, folder)
    main = folder / "SKILL.md"
    text = main.read_text(encoding="utf-8").replace("version: 1.0.0", f"version: {version}")
    main.write_text(text + f"\n{words}\n", encoding="utf-8")
    return folder


def versions(registry: LiveRegistry | str, slug: str, kind: str = "skills") -> httpx.Response:
    url = registry if isinstance(registry, str) else registry.url
    return httpx.get(f"{url}/api/v1/{kind}/{slug}/versions", timeout=30)


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[LiveRegistry]:
    with start_registry(tmp_path / "up") as reg:
        yield reg


def mirror_of(tmp_path: Path, url: str, *more: str) -> start_registry:  # type: ignore[valid-type]
    return start_registry(tmp_path / "mirror", serve_args=["--upstream", url, *more])


def test_a_lock_mixing_private_and_public_packages_installs_through_the_mirror_then_with_upstream_stopped(
        tmp_path: Path, upstream: LiveRegistry) -> None:
    publish(tmp_path, upstream, SKILLS / "git-workflow")  # public: upstream only
    with mirror_of(tmp_path, upstream.url, "--upstream-ttl", "1") as mirror:
        publish(tmp_path, mirror, SKILLS / "code-style")  # private: the mirror's own
        project = tmp_path / "project"
        project.mkdir()
        done = strawpot("install", "skill", "git-workflow", "skill", "code-style", cwd=project,
                        extra_env=env(tmp_path / "first", mirror.url))
        assert done.returncode == 0, done.stderr
        lock = Lockfile.load(project / "strawpot.lock")
        assert {p.name for p in lock.packages} == {"git-workflow", "code-style"}
        assert {p.source for p in lock.packages} == {mirror.url}
        upstream_sha = versions(upstream, "git-workflow").json()["versions"][0]["sha256"]
        assert next(p for p in lock.packages if p.name == "git-workflow").archive_sha256 == upstream_sha

        stop_server(upstream.process)
        clone = tmp_path / "clone"
        clone.mkdir()
        for name in ("strawpot.toml", "strawpot.lock"):
            shutil.copy(project / name, clone / name)
        again = strawpot("install", cwd=clone, extra_env=env(tmp_path / "second", mirror.url))
        assert again.returncode == 0, again.stderr
        assert {p.parent.name for p in clone.rglob("SKILL.md")} >= {"git-workflow", "code-style"}
        time.sleep(1.1)  # past the TTL: upstream is asked, cannot answer, the cache answers and says so
        stale = versions(mirror, "git-workflow")
        assert stale.status_code == 200 and stale.headers["x-strawpot-upstream"] == "stale"
        assert stale.json()["versions"][0]["sha256"] == upstream_sha
        assert "upstream unreachable: skill git-workflow served from the mirror's cache" in mirror.log()
