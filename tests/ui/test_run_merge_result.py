"""A worktree run's merge result: recorded in session.json at the run's end, shown by the run page and `sessions show`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE
from tests._cli import strawpot, strawpot_here
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))

pytestmark = pytest.mark.e2e
SECRET = "merge-result-secret"
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org"}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env={**os.environ, **IDENTITY})


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A locked project of stub agents that is a git repository (README.md committed, .strawpot/ ignored)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(),
                   policy={"max_depth": 3, "agent_timeout": 30, "kill_grace": 0.5}).build()
    (root / ".gitignore").write_text(".strawpot/\n")
    (root / "README.md").write_text("original\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "first")
    return root


def _the_run(root: Path) -> dict[str, Any]:
    [found] = (root / ".strawpot" / "sessions").glob("*/session.json")
    data: dict[str, Any] = json.loads(found.read_text())
    return data


def _run_page(root: Path, run_id: str, data_dir: Path) -> str:
    client = TestClient(create_app(root, SECRET, data_dir=data_dir), base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    response = client.get(f"{home_path(root)}runs/{run_id}")
    assert response.status_code == 200
    return response.text


@pytest.mark.parametrize(("task", "code", "state", "result"), [
    ("write:README.md=edited by the agent then write:src/new.txt=added", 0, "merged",
     "applied the session's changes to your working tree (2 files): README.md, src/new.txt"),
    # The user edits README.md while the run works (the agent does it for them, by absolute path): a conflict.
    ("write:{root}/README.md=the user's edit then write:README.md=the agent's edit", 3, "kept",
     "the session's changes do not apply cleanly to your working tree: README.md changed in your tree "
     "since the session started; nothing in it was changed"),
    ("write:half.txt=half done then fail:4", 4, "kept",
     "the session's worktree is kept at {path} (branch {branch}); `strawpot sessions --prune` removes it"),
])
def test_the_merge_result_is_recorded_and_shown(repo: Path, tmp_path: Path, task: str, code: int, state: str,
                                                result: str) -> None:
    proc = strawpot("start", "--headless", "--isolation", "worktree", "--merge", "patch", "--task",
                    task.format(root=repo), cwd=repo, extra_env=IDENTITY)
    assert proc.returncode == code, proc.stderr
    data = _the_run(repo)
    isolation = data["isolation"]
    expected = result.format(path=isolation["path"], branch=isolation["branch"])
    assert (isolation["state"], data["merge_result"]) == (state, expected)
    assert "\n" not in data["merge_result"]

    page = _run_page(repo, data["run_id"], tmp_path / "data")
    assert f'<p id="merge-result">Merge result: <q>{escape(expected)}</q></p>' in page
    assert f'<b id="worktree-state">{state}</b>' in page

    shown = strawpot_here("sessions", "show", data["run_id"], cwd=repo, extra_env=IDENTITY)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[lines.index(f"worktree: {isolation['branch']} ({state})") + 1] == f"merge: {expected}"


def test_a_run_without_a_worktree_records_no_merge_result(repo: Path, tmp_path: Path) -> None:
    proc = strawpot("start", "--headless", "--task", "echo:done", cwd=repo, extra_env=IDENTITY)
    assert proc.returncode == 0, proc.stderr
    data = _the_run(repo)
    assert data["merge_result"] == ""
    page = _run_page(repo, data["run_id"], tmp_path / "data")
    assert '<p id="merge-result" hidden>' in page
    assert "merge:" not in strawpot_here("sessions", "show", data["run_id"], cwd=repo, extra_env=IDENTITY).stdout
