"""`.strawpot/` is added to a git project's .gitignore once, as one line, and only in a git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from strawpot.model.gitignore import ignore_tree


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def repository(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=folder)
    return folder


def test_a_git_project_gets_the_one_line_and_git_then_ignores_the_tree(tmp_path: Path) -> None:
    project = repository(tmp_path / "p")
    (project / ".gitignore").write_text("node_modules/")  # no newline at the end
    (project / ".strawpot" / "sessions").mkdir(parents=True)
    (project / ".strawpot" / "sessions" / "run.json").write_text("{}")
    assert ignore_tree(project) == project / ".gitignore"
    assert (project / ".gitignore").read_text() == "node_modules/\n.strawpot/\n"
    assert git("status", "--porcelain", "--untracked-files=all", cwd=project).split() == ["??", ".gitignore"]
    assert ignore_tree(project) is None  # never twice
    assert (project / ".gitignore").read_text() == "node_modules/\n.strawpot/\n"


@pytest.mark.parametrize("line", [".strawpot", ".strawpot/", "/.strawpot", "  /.strawpot/  "])
def test_any_form_already_there_is_left_alone(tmp_path: Path, line: str) -> None:
    project = repository(tmp_path / "p")
    (project / ".gitignore").write_text(f"# ours\n{line}\n*.log\n")
    assert ignore_tree(project) is None
    assert (project / ".gitignore").read_text() == f"# ours\n{line}\n*.log\n"


def test_a_project_in_a_subfolder_of_a_repository(tmp_path: Path) -> None:
    top = repository(tmp_path / "repo")
    (top / "a").mkdir()
    assert ignore_tree(top / "a") == top / "a" / ".gitignore"
    assert (top / "a" / ".gitignore").read_text() == ".strawpot/\n"
    assert not (top / ".gitignore").exists()
    (top / "b").mkdir()
    (top / ".gitignore").write_text(".strawpot\n")  # reaches every subfolder
    assert ignore_tree(top / "b") is None
    (top / ".gitignore").write_text("/.strawpot\n")  # only the top's own
    assert ignore_tree(top / "b") == top / "b" / ".gitignore"


def test_outside_a_git_repository_nothing_is_written(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    assert ignore_tree(project) is None
    assert list(project.iterdir()) == []


@pytest.mark.parametrize("dangling", [False, True])
def test_a_gitignore_that_is_a_link_is_not_written_through(tmp_path: Path, dangling: bool) -> None:
    """A cloned repository's .gitignore may be a link to a file of the user's (~/.bashrc): it is left alone, and a
    dangling one does not create its target."""
    repo = repository(tmp_path / "repo")
    victim = tmp_path / "victim"
    if not dangling:
        victim.write_text("export PATH\n")
    (repo / ".gitignore").symlink_to(victim)
    assert ignore_tree(repo) is None
    assert (victim.read_text() == "export PATH\n") if not dangling else not victim.exists()
