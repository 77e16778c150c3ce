"""Real runs of the stub agent on the run page: its summary, its timeline and the files its worktree's merge brought
back; and, in a real browser, the summary and the files appearing when the run ends, without a reload."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE
from strawpot.model.fs import atomic_write
from tests._cli import strawpot
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project, git
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.ui._live import no_script_errors, serving, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "registry_server" / "web"))
from _browser import start_chromium  # noqa: E402

pytestmark = pytest.mark.e2e
SECRET = "run-page-e2e-secret"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A locked project of stub agents that is a git repository (README.md committed, .strawpot/ ignored)."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(),
                   policy={"max_depth": 3, "agent_timeout": 30, "kill_grace": 0.5}).build()
    return a_git_project(root)


def _start(repo: Path, *args: str) -> dict[str, Any]:
    proc = strawpot("start", "--headless", *args, cwd=repo, extra_env=IDENTITY)
    assert proc.returncode == 0, proc.stderr
    [found] = (repo / ".strawpot" / "sessions").glob("*/session.json")
    data: dict[str, Any] = json.loads(found.read_text())
    return data


def _page(repo: Path, run_id: str, tmp_path: Path) -> str:
    client = TestClient(create_app(repo, SECRET, data_dir=tmp_path / "data"), base_url="http://testserver")
    client.cookies.set(COOKIE, SECRET)
    response = client.get(f"{home_path(repo)}runs/{run_id}")
    assert response.status_code == 200
    return response.text


def _files(page: str) -> list[tuple[str, str, str]]:
    return re.findall(r"<tr><td><code>(.*?)</code></td><td>(\w+)</td><td>(.*?)</td></tr>", page)


def test_a_worktree_run_shows_its_summary_timeline_and_the_files_it_brought_back(repo: Path, tmp_path: Path) -> None:
    data = _start(repo, "--isolation", "worktree", "--task",
                  "write:README.md=edited then write:src/new.txt=added then echo:all done, <b>boss</b>")
    assert data["summary"].endswith("all done, <b>boss</b>")
    assert data["isolation"]["files"] == [{"path": "README.md", "change": "modified", "back": True},
                                          {"path": "src/new.txt", "change": "added", "back": True}]
    page = _page(repo, data["run_id"], tmp_path)
    shown = re.search(r'<div id="summary" class="summary">(.*?)</div>', page, re.S)
    assert shown is not None and shown.group(1).endswith("all done, &lt;b&gt;boss&lt;/b&gt;")
    assert _files(page) == [("README.md", "modified", "brought back to your working tree"),
                            ("src/new.txt", "added", "brought back to your working tree")]
    svg = ET.fromstring(re.search(r'<svg id="timeline".*?</svg>', page, re.S).group(0))  # type: ignore[union-attr]
    assert [r.get("data-agent") for r in svg.findall(f"{SVG}rect")] == [a["agent_id"] for a in data["agents"]]
    marks = [m.findtext(f"{SVG}title", "") for m in svg.findall(f"{SVG}circle")]
    assert marks[0].startswith("+0.0s run_started: role=orchestrator") and "run_finished" in marks[-1]


def test_a_branch_merge_lists_the_files_on_its_branch(repo: Path, tmp_path: Path) -> None:
    data = _start(repo, "--isolation", "worktree", "--merge", "branch", "--task", "write:notes.txt=n")
    assert data["isolation"]["files_total"] == 1
    assert _files(_page(repo, data["run_id"], tmp_path)) == [
        ("notes.txt", "added", f"on branch <code>{data['isolation']['branch']}</code>")]
    assert git(repo, "show", f"{data['isolation']['branch']}:notes.txt") == "n"


def test_a_conflict_lists_the_files_as_left_on_the_kept_branch(repo: Path, tmp_path: Path) -> None:
    proc = strawpot("start", "--headless", "--isolation", "worktree", "--task",
                    f"write:{repo}/README.md=the user's edit then write:README.md=the agent's edit",
                    cwd=repo, extra_env=IDENTITY)
    assert proc.returncode == 3, proc.stderr
    [found] = (repo / ".strawpot" / "sessions").glob("*/session.json")
    data = json.loads(found.read_text())
    assert data["isolation"]["state"] == "kept"
    assert _files(_page(repo, data["run_id"], tmp_path)) == [
        ("README.md", "modified", f"on branch <code>{data['isolation']['branch']}</code>")]


def test_a_run_in_the_project_folder_says_its_files_are_not_known(repo: Path, tmp_path: Path) -> None:
    data = _start(repo, "--task", "write:x.txt=x then echo:wrote x")
    page = _page(repo, data["run_id"], tmp_path)
    assert "Files the run produced: not known: the agents worked in the project folder itself" in page
    assert re.search(r'<div id="summary" class="summary">[^<]*wrote x</div>', page)


def test_an_open_run_page_shows_the_summary_merge_result_and_files_when_the_run_ends(tmp_path: Path) -> None:
    """run.js fills in the summary and the merge result from the live feed and redraws the worktree's state, the
    timeline and the files, without a reload."""
    project = tmp_path / "project"
    folder = project / ".strawpot" / "sessions" / "run1"
    folder.mkdir(parents=True)
    (project / "strawpot.toml").write_text("")
    session: dict[str, Any] = {
        "run_id": "run1", "role": "lead", "state": "running", "started_at": time.time(), "merge_result": "",
        "isolation": {"kind": "worktree", "working_dir": "/w/run1", "path": "/w/run1", "branch": "strawpot/run1",
                      "merge": "patch", "state": "active"},
        "agents": [{"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running",
                    "started_at": time.time()}]}
    atomic_write(folder / "session.json", json.dumps(session), durable=False)
    summary = "Fixed it.\n<script>window.pwned = true</script><b>bold?</b>"
    result = "applied the session's changes to your working tree (1 file): <b>x</b>.md"
    driver = start_chromium(tmp_path / "profile")
    try:
        with serving(create_app(project, SECRET, data_dir=tmp_path / "data")) as base:
            driver.get(f"{base}{home_path(project)}runs/run1?token={SECRET}")
            assert not driver.find_element(By.ID, "summary").is_displayed()
            assert "appears here when the run ends" in driver.find_element(By.ID, "summary-none").text
            assert "still working in its worktree" in driver.find_element(By.ID, "files").text
            assert not driver.find_element(By.ID, "merge-result").is_displayed()
            assert "still working in it" in driver.find_element(By.ID, "worktree").text
            driver.execute_script("window.notReloaded = true")
            session["agents"][0]["state"] = session["state"] = "succeeded"
            session["agents"][0]["ended_at"] = session["ended_at"] = time.time()
            session["summary"], session["merge_result"] = summary, result
            session["isolation"].update(state="merged", files_total=1,
                                        files=[{"path": "<i>x</i>.md", "change": "added", "back": True}])
            atomic_write(folder / "session.json", json.dumps(session), durable=False)
            wait_for(lambda: driver.find_element(By.ID, "summary").is_displayed(), "the summary")
            assert driver.find_element(By.ID, "summary").text == summary  # as text, inert
            assert not driver.find_element(By.ID, "summary-none").is_displayed()
            wait_for(lambda: driver.find_elements(By.ID, "files-table"), "the files")
            assert driver.find_element(By.CSS_SELECTOR, "#files-table code").text == "<i>x</i>.md"
            assert driver.find_elements(By.CSS_SELECTOR, "#timeline rect.state-succeeded")
            wait_for(lambda: driver.find_element(By.ID, "merge-result").is_displayed(), "the merge result")
            assert driver.find_element(By.CSS_SELECTOR, "#merge-result q").text == result  # as text, inert
            assert driver.find_element(By.ID, "worktree-state").text == "merged"
            assert "still working in it" not in driver.find_element(By.ID, "worktree").text
            assert driver.execute_script("return window.notReloaded") is True
            assert driver.execute_script("return window.pwned") is None
            no_script_errors(driver)
    finally:
        driver.quit()
