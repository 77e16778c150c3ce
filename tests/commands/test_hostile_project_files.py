"""A cloned repository's strawpot.lock or strawpot.toml, or one in a folder above, planted as a FIFO, a link to an
endless device or a file larger than any real one: every command answers promptly, in one line, and writes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._cli import strawpot

SKILL = "---\nname: a\ndescription: A local skill.\nmetadata:\n  version: 1.0.0\n---\n\nBody.\n"
COMMANDS = (["tree"], ["why", "skill", "a"], ["list"], ["verify"], ["install"], ["lock"], ["sync"], ["config", "show"],
            ["add", "skill", "b"], ["remove", "skill", "a"])
# what reads which file (a command that never reads it is not asked about it)
READERS = {"strawpot.lock": ("tree", "why", "list", "verify", "install", "lock", "sync", "add", "remove"),
           "strawpot.toml": ("tree", "why", "list", "verify", "install", "lock", "sync", "config", "add", "remove")}


@pytest.fixture
def project(tmp_path: Path, free_tcp_port: int) -> tuple[Path, dict[str, str]]:
    """A project of one skill installed from a folder (nothing fetched: the registry's port has no server)."""
    (tmp_path / "skills" / "a").mkdir(parents=True)
    (tmp_path / "skills" / "a" / "SKILL.md").write_text(SKILL)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "strawpot.toml").write_text('[skills]\na = { path = "../skills/a" }\n')
    env = {"STRAWPOT_CACHE_DIR": str(tmp_path / "cache"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
           "STRAWPOT_REGISTRY_URL": f"http://127.0.0.1:{free_tcp_port}"}
    done = strawpot("install", cwd=proj, extra_env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return proj, env


def _plant(path: Path, planted: str) -> None:
    path.unlink(missing_ok=True)
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "endless link":
        path.symlink_to("/dev/zero")
    else:  # a sparse file: 65 MiB to a reader, nothing on disk
        with path.open("wb") as fh:
            fh.truncate(65 * 1024 * 1024)


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.lstat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("planted", ["fifo", "endless link", "oversized"])
@pytest.mark.parametrize("name", ["strawpot.lock", "strawpot.toml"])
def test_a_planted_lock_or_manifest_is_refused_in_one_line_by_every_command_that_reads_it(
        project: tuple[Path, dict[str, str]], name: str, planted: str) -> None:
    """Before, a FIFO hung every one of these commands and a link to /dev/zero read until memory ran out."""
    proj, env = project
    _plant(proj / name, planted)
    before = _snapshot(proj)
    # every reader meets the FIFO; the link and the giant, which take the same one open, meet two of them
    for argv in COMMANDS if planted == "fifo" else (["tree"], ["install"]):
        done = strawpot(*argv, cwd=proj, extra_env=env, timeout=20)  # a blocked or endless read times out
        if argv[0] not in READERS[name]:
            continue
        assert done.returncode == 2, (argv, done.returncode, done.stderr)
        first, *rest = done.stderr.strip().splitlines()
        assert first.startswith(f"error: {proj / name}: cannot read") and "Traceback" not in done.stderr, argv
        assert ("larger than" if planted == "oversized" else "not a regular file") in first, (argv, first)
        assert [line.startswith("hint: ") for line in rest] == [True], (argv, done.stderr)
    assert _snapshot(proj) == before  # nothing written, nothing moved


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_planted_manifest_in_a_folder_above_is_passed_over(project: tuple[Path, dict[str, str]], planted: str) -> None:
    """The search for an enclosing workspace reads the strawpot.toml of every folder above the project: one a
    stranger planted in a shared folder (/tmp) is no workspace, and the project's commands go on (a guard: the
    search asks `is_file` first, and reads through `read_own_text` since this change)."""
    proj, env = project
    _plant(proj.parent / "strawpot.toml", planted)
    for argv in (["tree"], ["verify"], ["install"]):
        done = strawpot(*argv, cwd=proj, extra_env=env, timeout=20)
        assert done.returncode == 0, (argv, done.stderr)
    assert "skill a 1.0.0" in strawpot("tree", cwd=proj, extra_env=env, timeout=20).stdout


def test_a_linked_manifest_and_lock_of_the_users_own_are_read_through_the_link(
        project: tuple[Path, dict[str, str]]) -> None:
    """A link is not refused for these files (a user may keep strawpot.toml elsewhere), only what is behind it."""
    proj, env = project
    for name in ("strawpot.toml", "strawpot.lock"):
        kept = proj.parent / f"kept-{name}"
        (proj / name).rename(kept)
        (proj / name).symlink_to(kept)
    for argv in (["tree"], ["verify"], ["install"], ["config", "show"]):
        done = strawpot(*argv, cwd=proj, extra_env=env, timeout=20)
        assert done.returncode == 0, (argv, done.stderr)
