"""`strawpot memory`: the same note remembered twice is one entry, and in the home folder, where a project's
`.strawpot` is the default $STRAWPOT_HOME, project and global memory are told apart."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests._cli import strawpot_here


def _env(home: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "STRAWPOT_HOME"}  # the default: ~/.strawpot
    return {**environ, "HOME": str(home), "STRAWPOT_CONFIG_DIR": str(home / "config")}


def _entries(cwd: Path, env: dict[str, str]) -> list[dict[str, str]]:
    done = strawpot_here("memory", "list", "--json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["entries"])


def test_remembering_the_same_note_twice_stores_it_once(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "strawpot.toml").write_text("")
    env = _env(tmp_path / "home")
    first = strawpot_here("memory", "remember", "tests run with pytest -q", cwd=tmp_path / "proj", env=env)
    again = strawpot_here("memory", "remember", "tests run with pytest -q", "--keyword", "pytest", cwd=tmp_path / "proj",
                          env=env)
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert again.stdout == first.stdout
    [entry] = _entries(tmp_path / "proj", env)
    assert entry["id"] == first.stdout.strip() and entry["keywords"] == ["pytest"]


def test_in_the_home_folder_each_note_is_listed_once_and_project_notes_stay_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "strawpot.toml").write_text("")  # `strawpot init` in the home folder
    env = _env(home)
    for args in (("a note for the home project",), ("a note for every project", "--scope", "global")):
        done = strawpot_here("memory", "remember", *args, cwd=home, env=env)
        assert done.returncode == 0, done.stderr
    assert (home / ".strawpot" / "memory" / "memory.db").is_file()  # the project's store is the global one
    listed = _entries(home, env)
    assert sorted((e["scope"], e["content"]) for e in listed) == [
        ("global", "a note for every project"), ("project", "a note for the home project")]
    other = home / "code" / "app"
    other.mkdir(parents=True)
    (other / "strawpot.toml").write_text("")
    assert [(e["scope"], e["content"]) for e in _entries(other, env)] == [("global", "a note for every project")]
