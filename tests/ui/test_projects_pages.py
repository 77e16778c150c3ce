"""The UI's home (projects you have used), a project's locked packages with verify status, and the schedules page."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE
from orchestrator.projects import ProjectStore
from orchestrator.schedules import Schedule, ScheduleRun, ScheduleStore
from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

SECRET = "projects-secret"


def _client(data: Path, home: Path | None = None) -> TestClient:
    client = TestClient(create_app(home, SECRET, data_dir=data), follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    return client


def _built(root: Path) -> ProjectFixture:
    root.mkdir(parents=True)
    return ProjectFixture(root, standard_roles(), standard_skills()).build()


def test_the_store_keeps_one_entry_per_project_most_recent_first(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path / "data")
    store.record(Path("/a"), now=1.0)
    store.record(Path("/b"), now=2.0)
    store.record(Path("/a"), now=3.0)
    found, problem = ProjectStore(tmp_path / "data").load()
    assert problem == "" and [(str(p.path), p.last_used) for p in found] == [("/a", 3.0), ("/b", 2.0)]


def test_an_unreadable_projects_file_is_reported_and_never_overwritten(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path / "data")
    store.file.parent.mkdir(parents=True)
    store.file.write_text("{not json")
    store.record(Path("/a"))
    assert store.file.read_text() == "{not json"
    page = _client(tmp_path / "data").get("/")
    assert page.status_code == 200 and "cannot read" in page.text and "fix or remove it" in page.text


def test_home_lists_used_projects_and_a_vanished_one_as_missing(tmp_path: Path) -> None:
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.mkdir()
    (kept / "strawpot.toml").write_text("")
    store = ProjectStore(tmp_path / "data")
    store.record(kept, now=2.0)
    store.record(gone, now=1.0)
    client = _client(tmp_path / "data")
    home = client.get("/").text
    assert home.index(home_path(kept)) < home.index(home_path(gone)) and home.count("missing") == 1
    page = client.get(home_path(gone))
    assert page.status_code == 200 and "This project is missing" in page.text and "Start a session" not in page.text
    assert client.post(home_path(gone) + "start").status_code == 403  # still guarded first


def test_the_project_page_lists_locked_packages_with_verify_status(tmp_path: Path) -> None:
    project = _built(tmp_path / "proj")
    client = _client(tmp_path / "data", project.root)
    page = client.get(home_path(project.root)).text
    assert 'id="packages"' in page and "stub-agent" in page and "implementer" in page
    assert page.count('class="ok"') == 9 and 'class="error"' not in page  # 1 agent, 4 roles, 4 skills

    (project.state_dir / "skills" / "coding" / "SKILL.md").write_text("tampered\n")
    page = client.get(home_path(project.root)).text
    assert page.count('class="ok"') == 8 and "skill coding: SKILL.md: " in page


def test_a_project_without_a_lock_says_so_and_still_lists_its_runs(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / ".strawpot" / "sessions" / "run1").mkdir(parents=True)
    (root / "strawpot.toml").write_text("")
    (root / ".strawpot" / "sessions" / "run1" / "session.json").write_text(json.dumps(
        {"run_id": "run1", "role": "lead", "state": "succeeded", "started_at": 1.0, "agents": []}))
    page = _client(tmp_path / "data", root).get(home_path(root)).text
    assert "no lockfile" in page and "/runs/run1" in page


def test_the_schedules_page_shows_next_fire_and_links_the_last_run(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".strawpot" / "sessions" / "run_20261123_090000_abcdef").mkdir(parents=True)
    (project / ".strawpot" / "sessions" / "run_20261123_090000_abcdef" / "session.json").write_text(json.dumps(
        {"run_id": "run_20261123_090000_abcdef", "role": "triager", "state": "failed", "agents": []}))
    store = ScheduleStore(tmp_path / "data")
    store.add(Schedule("triage", "0 9 * * 1-5", project, "triager", "triage issues", timezone="Europe/Paris"))
    store.add(Schedule("coverage", "30 2 * * *", project, "tester", "raise coverage"))
    store.add(Schedule("review", "0 * * * *", project, "reviewer", "review PRs"))
    fired = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    store.record(ScheduleRun("triage", "run_20261123_090000_abcdef", fired, "started"))
    store.record(ScheduleRun("review", "run_20261123_100000_000000", fired, "succeeded"))  # folder gone

    client = _client(tmp_path / "data")
    page = client.get("/schedules").text
    rows = {r.split("</td>")[0]: r for r in page.split('<tr><td>')[1:]}
    assert "0 9 * * 1-5" in rows["triage"] and "Europe/Paris" in rows["triage"] and "CET" in rows["triage"]
    link = f"{home_path(project)}runs/run_20261123_090000_abcdef"
    assert f'href="{link}"' in rows["triage"] and ">failed<" in rows["triage"]  # the run's own state
    assert "never ran" in rows["coverage"]
    assert ">succeeded<" in rows["review"] and "run page" not in rows["review"]
    assert client.get(link).status_code == 200  # the schedule's project is served even if never started by hand


def test_the_schedules_page_says_why_the_last_fire_failed(tmp_path: Path) -> None:
    store = ScheduleStore(tmp_path / "data")
    store.add(Schedule("triage", "0 9 * * 1-5", tmp_path / "gone", "triager", "triage <issues>"))
    store.record(ScheduleRun("triage", None, datetime(2026, 11, 23, 8, 0, tzinfo=UTC), "failed",
                             error="project folder /x <y> does not exist: create it or remove the schedule"))
    page = _client(tmp_path / "data").get("/schedules").text
    assert ('>failed</span>: <span class="why">project folder /x &lt;y&gt; does not exist: create it or remove the '
            'schedule</span>') in page


def test_an_unreadable_schedules_file_is_one_line_and_the_page_renders(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "schedules.json").write_text("[")
    page = _client(tmp_path / "data").get("/schedules")
    assert page.status_code == 200 and "cannot read" in page.text


def test_a_schedules_file_or_history_of_another_shape_leaves_every_page_rendering(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    data = tmp_path / "data"
    ScheduleStore(data).add(Schedule("triage", "0 9 * * 1-5", project, "r", "t"))
    (data / "schedule-history").mkdir()
    (data / "schedule-history" / "triage.json").write_text('{"runs": [{"schedule": "triage"}]}')
    client = _client(data, project)
    assert client.get("/schedules").status_code == 200  # the history's problem is that row's, not the page's
    (data / "schedules.json").write_text('{"schedules": [{"name": "triage"}]}')
    for path in ("/", "/schedules", home_path(project)):
        page = client.get(path)
        assert page.status_code == 200, path
    assert "cannot read" in client.get("/schedules").text


def test_strawpot_start_records_its_project(tmp_path: Path) -> None:
    project = _built(tmp_path / "proj")
    env = {**os.environ, "STRAWPOT_DATA_DIR": str(tmp_path / "data"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = strawpot("start", "--headless", "--task", "echo:hi", cwd=project.root, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    found, _ = ProjectStore(tmp_path / "data").load()
    assert [p.path for p in found] == [project.root.resolve()]
    assert home_path(project.root.resolve()) in _client(tmp_path / "data").get("/").text
