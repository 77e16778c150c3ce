"""`strawpot install KIND 'SLUG^9'` when no version matches: the error names the versions there are (the newest
few, yanked and pre-releases left out), in text and in `--json`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests.install.conftest import Registry

FEW = ["1.0.0", "1.2.0", "2.0.0", "2.1.0-beta.1"]
MANY = [f"1.{minor}.0" for minor in range(8)]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("versions")
    with start_registry(work / "data") as live:
        reg = Registry(live, work)
        for version in FEW:
            reg.publish("skill", "few-versions", version)
        reg.publish("skill", "few-versions", "2.5.0")
        reg.client.yank("skill", "few-versions", "2.5.0")
        for version in MANY:
            reg.publish("skill", "many-versions", version)
        yield live


def install(registry: LiveRegistry, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "proj").mkdir(exist_ok=True)
    return strawpot_here("install", *args, cwd=tmp_path / "proj", extra_env={
        "STRAWPOT_REGISTRY_URL": registry.url, "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
        "STRAWPOT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1", "COLUMNS": "400"})


def test_the_error_lists_the_versions_there_are(registry: LiveRegistry, tmp_path: Path) -> None:
    done = install(registry, tmp_path, "skill", "few-versions^9")
    assert done.returncode == 3, done.stderr
    assert ("your project depends on skill few-versions ^9 which doesn't match any versions "
            "(skill few-versions has 1.0.0, 1.2.0, 2.0.0), version solving failed") in done.stderr, done.stderr
    assert "2.5.0" not in done.stderr and "beta" not in done.stderr  # yanked, pre-release
    assert "Traceback" not in done.stderr


def test_only_the_newest_few_are_listed_and_json_has_them(registry: LiveRegistry, tmp_path: Path) -> None:
    done = install(registry, tmp_path, "skill", "many-versions^9", "--json")
    assert done.returncode == 3
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "conflict"
    assert ("skill many-versions ^9 which doesn't match any versions (skill many-versions has 8 versions; the "
            "newest: 1.3.0, 1.4.0, 1.5.0, 1.6.0, 1.7.0)") in error["message"], error["message"]
