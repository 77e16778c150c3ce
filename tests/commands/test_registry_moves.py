"""A project locked against one registry and used with another (the demo's, then your own) is told so.

- locking against another registry notes every package whose source moves (text and `--json`);
- a package the chosen registry does not have, but the lock has from another, names that other registry;
- a registry only the lock names (no setting chose it) that is gone says where it came from and what to do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from strawpot.model.lockfile import Lockfile
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry, stop_server

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "fixtures" / "skills"


def _env(base: Path, url: str, token: str = "") -> dict[str, str]:
    """`url` as STRAWPOT_REGISTRY_URL ("" leaves the choice to the lock), with a config and cache of the test's."""
    return {"STRAWPOT_REGISTRY_URL": url, "STRAWPOT_TOKEN": token, "STRAWPOT_TOKEN_REGISTRY": "",
            "STRAWPOT_CONFIG_DIR": str(base / "config"), "STRAWPOT_CACHE_DIR": str(base / "cache")}


def _publish(base: Path, registry: LiveRegistry, *skills: str) -> None:
    for skill in skills:
        done = strawpot_here("publish", SKILLS / skill, cwd=base, extra_env=_env(base, registry.url, registry.token))
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveRegistry, LiveRegistry]]:
    """A (the demo's): git-workflow, code-style, diff-reading; B (yours): git-workflow and code-style only."""
    base_a, base_b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    with start_registry(base_a) as a, start_registry(base_b) as b:
        _publish(base_a, a, "git-workflow", "code-style", "diff-reading")
        _publish(base_b, b, "git-workflow", "code-style")
        yield a, b


def _locked_from(tmp_path: Path, url: str, *skills: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    args = [part for skill in skills for part in ("skill", skill)]
    done = strawpot_here("install", *args, cwd=project, extra_env=_env(tmp_path, url))
    assert done.returncode == 0, done.stderr
    assert {p.source for p in Lockfile.load(project / "strawpot.lock").packages} == {url}
    return project


def test_locking_against_another_registry_notes_the_moved_sources(
        tmp_path: Path, registries: tuple[LiveRegistry, LiveRegistry]) -> None:
    a, b = registries
    project = _locked_from(tmp_path, a.url, "git-workflow", "code-style")
    result = strawpot_here("update", cwd=project, extra_env=_env(tmp_path, b.url))
    assert result.returncode == 0, result.stderr
    assert f"lock: 2 packages now come from {b.url} (were {a.url})" in result.stderr.splitlines()
    assert {p.source for p in Lockfile.load(project / "strawpot.lock").packages} == {b.url}
    back = strawpot_here("update", "--json", cwd=project, extra_env=_env(tmp_path, a.url))
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["lock"]["moved"] == [{"packages": 2, "from": b.url, "to": a.url}]
    again = strawpot_here("update", "--json", cwd=project, extra_env=_env(tmp_path, a.url))
    assert json.loads(again.stdout)["lock"]["moved"] == []  # nothing moved: nothing said


def test_a_package_only_the_locks_registry_has_names_that_registry(
        tmp_path: Path, registries: tuple[LiveRegistry, LiveRegistry]) -> None:
    a, b = registries
    project = _locked_from(tmp_path, a.url, "diff-reading")
    result = strawpot_here("update", "skill", "diff-reading", cwd=project, extra_env=_env(tmp_path, b.url))
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert errors == [
        f"error: skill diff-reading is not on the registry {b.url}; strawpot.lock has it from another registry, "
        f"{a.url}",
        f"hint: install from the registry the lock names (--registry {a.url}, if it still runs), or publish skill "
        f"diff-reading to {b.url}",
    ]


def test_a_gone_registry_the_lock_names_says_so(tmp_path: Path) -> None:
    with start_registry(tmp_path / "gone") as demo:
        _publish(tmp_path, demo, "git-workflow", "code-style")
        project = _locked_from(tmp_path, demo.url, "git-workflow")
        stop_server(demo.process)
        result = strawpot_here("install", "skill", "code-style", cwd=project, extra_env=_env(tmp_path, ""))
    assert result.returncode == 6, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert errors[0].startswith(f"error: registry unreachable at {demo.url}/"), errors
    assert errors[1:] == [
        f"hint: {demo.url} is where strawpot.lock's packages came from (no setting names a registry); if it is gone "
        "or moved, name the one to use with --registry, STRAWPOT_REGISTRY_URL or [registry] url"]


def test_lock_notes_the_moved_sources_too(tmp_path: Path, registries: tuple[LiveRegistry, LiveRegistry]) -> None:
    a, b = registries
    project = _locked_from(tmp_path, a.url, "git-workflow")
    with (project / "strawpot.toml").open("a") as manifest:
        manifest.write('code-style = "*"\n')
    result = strawpot_here("lock", cwd=project, extra_env=_env(tmp_path, b.url))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == f"lock: 1 package now comes from {b.url} (was {a.url})"
