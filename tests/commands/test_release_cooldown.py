"""`[install] min_release_age`: resolution skips versions published more recently than that and says which; the
lock records the value, so `--locked` and `lock --check` agree with it and a changed value makes the lock stale."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests.commands._aged import backdate
from tests.install.conftest import Registry


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("cooldown")
    with start_registry(work / "data") as live:
        reg = Registry(live, work)
        reg.publish("skill", "cool-a", "1.0.0")
        backdate(live.data_dir, "skill", "cool-a", "1.0.0", days=10)
        reg.publish("skill", "cool-a", "1.1.0")  # published now
        reg.publish("skill", "cool-fresh", "1.0.0")  # its only version, published now
        reg.client.close()
        yield live


def run(registry: LiveRegistry, proj: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return strawpot_here(*args, cwd=proj, extra_env={
        "STRAWPOT_REGISTRY_URL": registry.url, "STRAWPOT_CONFIG_DIR": str(proj.parent / "config"),
        "STRAWPOT_CACHE_DIR": str(proj.parent / "cache"), "NO_COLOR": "1", "COLUMNS": "400", **env})


def project(tmp_path: Path, body: str) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "strawpot.toml").write_text(body, encoding="utf-8")
    return proj


def test_a_fresh_version_is_skipped_and_named_and_the_lock_stays_valid(registry: LiveRegistry,
                                                                        tmp_path: Path) -> None:
    proj = project(tmp_path, '[install]\nmin_release_age = "3d"\n\n[skills]\ncool-a = "*"\n')
    done = run(registry, proj, "install")
    assert done.returncode == 0, done.stderr
    assert re.search(r"skipped skill cool-a 1\.1\.0: published \d+[sm] ago, younger than \[install\] "
                     r"min_release_age \(3d\)", done.stderr), done.stderr
    assert (proj / ".strawpot" / "skills" / "cool-a" / ".version").read_text() == "1.0.0\n"
    lock = (proj / "strawpot.lock").read_text()
    assert 'min-release-age = "3d"' in lock and 'version = "1.0.0"' in lock
    for args in (("install", "--locked"), ("lock", "--check"), ("install",)):
        again = run(registry, proj, *args)
        assert again.returncode == 0, (args, again.stderr)
    assert (proj / "strawpot.lock").read_text() == lock


def test_install_json_lists_what_was_too_young(registry: LiveRegistry, tmp_path: Path) -> None:
    proj = project(tmp_path, '[skills]\ncool-a = "*"\n')
    done = run(registry, proj, "install", "--json", STRAWPOT_INSTALL_MIN_RELEASE_AGE="12h")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(t["kind"], t["name"], t["version"]) for t in report["too_young"]] == [("skill", "cool-a", "1.1.0")]
    assert report["installed"][0]["version"] == "1.0.0"


def test_a_changed_setting_makes_the_lock_out_of_date_and_says_why(registry: LiveRegistry, tmp_path: Path) -> None:
    proj = project(tmp_path, '[install]\nmin_release_age = "3d"\n\n[skills]\ncool-a = "*"\n')
    assert run(registry, proj, "lock").returncode == 0
    for args in (("install", "--locked"), ("lock", "--check")):
        stale = run(registry, proj, *args, STRAWPOT_INSTALL_MIN_RELEASE_AGE="1h")
        assert stale.returncode == 4, (args, stale.stderr)
        assert ('it was made with [install] min_release_age "3d"; the setting is now "1h" '
                "(env STRAWPOT_INSTALL_MIN_RELEASE_AGE)") in stale.stderr, stale.stderr
        assert "Traceback" not in stale.stderr


def test_without_the_setting_the_newest_is_chosen(registry: LiveRegistry, tmp_path: Path) -> None:
    proj = project(tmp_path, '[skills]\ncool-a = "*"\n')
    done = run(registry, proj, "install")
    assert done.returncode == 0, done.stderr
    assert (proj / ".strawpot" / "skills" / "cool-a" / ".version").read_text() == "1.1.0\n"
    assert "skipped" not in done.stderr and "min-release-age" not in (proj / "strawpot.lock").read_text()


def test_only_young_versions_is_a_conflict_that_names_the_cooldown(registry: LiveRegistry, tmp_path: Path) -> None:
    proj = project(tmp_path, '[install]\nmin_release_age = "3d"\n\n[skills]\ncool-fresh = "*"\n')
    done = run(registry, proj, "install")
    assert done.returncode == 3, done.stderr
    assert "[install] min_release_age left out skill cool-fresh 1.0.0" in done.stderr, done.stderr
    assert not (proj / "strawpot.lock").exists()


def test_a_value_that_is_no_duration_is_one_line_naming_it(registry: LiveRegistry, tmp_path: Path) -> None:
    proj = project(tmp_path, '[install]\nmin_release_age = "soon"\n\n[skills]\ncool-a = "*"\n')
    done = run(registry, proj, "install")
    assert done.returncode == 2, done.stderr
    assert "install.min_release_age: 'soon' is not a duration" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (proj / "strawpot.lock").exists()


def test_a_cooldown_set_later_in_the_global_config_is_seen_by_the_no_op_check(registry: LiveRegistry,
                                                                                 tmp_path: Path) -> None:
    proj = project(tmp_path, '[skills]\ncool-a = "*"\n')
    assert run(registry, proj, "install").returncode == 0
    assert run(registry, proj, "install", "--locked").stderr.startswith("Already up to date")
    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text('[install]\nmin_release_age = "3d"\n', encoding="utf-8")
    stale = run(registry, proj, "install", "--locked")
    assert stale.returncode == 4, stale.stderr
    assert "it was made with [install] min_release_age not set; the setting is now \"3d\" (global config " in \
        stale.stderr, stale.stderr


def test_a_locked_version_that_is_too_young_is_moved_off_when_the_cooldown_is_set(registry: LiveRegistry,
                                                                                  tmp_path: Path) -> None:
    proj = project(tmp_path, '[skills]\ncool-a = "*"\n')
    assert run(registry, proj, "install").returncode == 0
    assert 'version = "1.1.0"' in (proj / "strawpot.lock").read_text()
    done = run(registry, proj, "install", STRAWPOT_INSTALL_MIN_RELEASE_AGE="3d")
    assert done.returncode == 0, done.stderr
    assert "skill cool-a 1.1.0 → 1.0.0" in done.stderr and "skipped skill cool-a 1.1.0" in done.stderr, done.stderr
    assert 'min-release-age = "3d"' in (proj / "strawpot.lock").read_text()
