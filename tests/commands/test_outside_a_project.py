"""Outside a project, the commands that write a project's state stop with one line naming where they looked and
`strawpot init`, exit 2, and write nothing (as uv stops with "No pyproject.toml found")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import strawpot_here

WRITERS = [
    ("lock",), ("lock", "--check"), ("sync",), ("update", "--all"), ("trust", "skill:x"),
    ("memory", "remember", "a note"), ("memory", "list"), ("memory", "recall", "note"), ("memory", "forget", "x"),
    ("mcp", "serve"), ("start", "--headless", "--task", "x"), ("chat", "--task", "x"), ("chat", "--list"),
]


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "STRAWPOT_HOME": str(tmp_path / "strawpot-home"),
            "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "STRAWPOT_CACHE_DIR": str(tmp_path / "cache"),
            "STRAWPOT_REGISTRY_URL": "http://127.0.0.1:9"}


@pytest.mark.parametrize("args", WRITERS, ids=[" ".join(a) for a in WRITERS])
def test_a_command_that_writes_project_state_stops_outside_a_project(args: tuple[str, ...], tmp_path: Path) -> None:
    here = tmp_path / "not-a-project" / "sub"
    here.mkdir(parents=True)
    done = strawpot_here(*args, cwd=here, extra_env=_env(tmp_path))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[0] == (f"error: no strawpot.toml or strawpot.lock in {here} or any folder above it, so there is "
                        "no project here"), done.stderr
    assert len(lines) == 2 and "strawpot init" in lines[1] and "--project" in lines[1], done.stderr
    assert list((tmp_path / "not-a-project").rglob("*")) == [here]  # nothing written
    named = strawpot_here(*args, "--project", str(here), cwd=tmp_path, extra_env=_env(tmp_path))
    assert named.returncode == 2 and f"no strawpot.toml or strawpot.lock in {here}, so" in named.stderr
    assert list((tmp_path / "not-a-project").rglob("*")) == [here]


def test_in_a_project_below_the_current_folder_they_still_work(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "deep").mkdir(parents=True)
    (project / "strawpot.toml").write_text("")
    done = strawpot_here("lock", cwd=project / "deep", extra_env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (project / "strawpot.lock").is_file() and not (project / "deep" / "strawpot.lock").exists()
    assert strawpot_here("memory", "remember", "a note", cwd=project / "deep", extra_env=_env(tmp_path)).returncode == 0
    assert (project / ".strawpot" / "memory" / "memory.db").is_file()


def test_the_global_scope_needs_no_project(tmp_path: Path) -> None:
    here = tmp_path / "anywhere"
    here.mkdir()
    done = strawpot_here("lock", "--global", cwd=here, extra_env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "strawpot-home" / "global" / "strawpot.lock").is_file() and list(here.iterdir()) == []
