"""The dashboard cancels, prunes and checks a resume by calling orchestrator.run_control in its own process: no
`strawpot` command runs for them (the tests forbid every child process while the page acts)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app
from dashboard.security import COOKIE
from orchestrator.run_record import State, read_run
from strawpot.commands.ui import project_settings
from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture
from tests.ui.test_ui_steer import SECRET, STRAWPOT, _p, _post, _until, project  # noqa: F401 -- project: a fixture

NO_STRAWPOT = ["/nonexistent/strawpot"]  # the command the UI would run, were it to run one


@pytest.fixture
def no_child_process(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every process this test process tries to start, refused (the UI must start none for these)."""
    tried: list[Any] = []

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        tried.append(args)
        _refuse(self, args)

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setenv("PATH", "/nonexistent")
    return tried


def _client(root: Path) -> TestClient:
    client = TestClient(create_app(root, SECRET, NO_STRAWPOT, settings=project_settings), base_url="http://testserver",
                        follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    return client


def _running_root(started: ProjectFixture) -> str:
    runs = list(started.sessions_dir.glob("*/session.json"))
    if not runs:
        return ""
    record = read_run(started.sessions_dir, runs[0].parent.name)
    return record.run_id if record.root is not None and record.root.state == State.RUNNING else ""


def test_cancel_from_the_page_ends_a_real_run_in_process(project: ProjectFixture,  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    project.build()
    run = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "sleep:60"], cwd=project.root,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        run_id = _until(lambda: _running_root(project))
        client = _client(project.root)
        with monkeypatch.context() as forbid:  # from here on, no process may start, and no strawpot is on PATH
            forbid.setattr(subprocess.Popen, "__init__", _refuse)
            forbid.setenv("PATH", "/nonexistent")
            response = _post(client, f"{_p(project.root)}/runs/{run_id}/cancel")
        assert response.status_code == 303, response.text
        assert run.wait(timeout=30) == 130
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
    record = read_run(project.sessions_dir, run_id)
    assert (record.state, record.exit_code) == (State.CANCELLED, 130)


def _refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
    raise AssertionError(f"the dashboard started a process: {args}")


def test_a_refused_cancel_and_an_unknown_run_are_one_line_each(project: ProjectFixture,  # noqa: F811
                                                              no_child_process: list[Any]) -> None:
    run_dir = project.sessions_dir / "run1"
    run_dir.mkdir(parents=True)
    (project.root / "strawpot.toml").write_text("")
    (run_dir / "session.json").write_text('{"run_id": "run1", "role": "lead", "state": "succeeded", '
                                          '"started_at": 1, "agents": []}')
    client = _client(project.root)
    ended = _post(client, f"{_p(project.root)}/runs/run1/cancel")
    assert (ended.status_code, ended.text) == (409, "run run1 has ended (succeeded); there is nothing to cancel")
    assert _post(client, f"{_p(project.root)}/runs/run_nope/cancel").text == "no run 'run_nope'"
    (run_dir / "session.json").write_text('{"state": "running", "agents": [{"agent_id": 7}]}')
    broken = _post(client, f"{_p(project.root)}/runs/run1/cancel")
    assert broken.status_code == 409 and "is unreadable: agent #1: agent_id is not a string" in broken.text
    assert no_child_process == []


def test_prune_from_the_page_runs_in_process(project: ProjectFixture,  # noqa: F811
                                             no_child_process: list[Any]) -> None:
    (project.root / "strawpot.toml").write_text("")
    project.sessions_dir.mkdir(parents=True)
    response = _post(_client(project.root), f"{_p(project.root)}/prune")
    assert response.status_code == 303 and no_child_process == []


def test_a_resume_that_cannot_go_is_refused_before_any_process_starts(project: ProjectFixture,  # noqa: F811
                                                                      tmp_path: Path) -> None:
    project.build()  # the stub agent as it is: it declares no resume
    done = strawpot("start", "--headless", "--task", "pause", cwd=project.root)
    assert done.returncode == 0, done.stderr
    [folder] = project.sessions_dir.iterdir()
    record = read_run(project.sessions_dir, folder.name)
    assert record.state == State.PAUSED
    client = _client(project.root)
    with pytest.MonkeyPatch.context() as forbid:
        forbid.setattr(subprocess.Popen, "__init__", _refuse)
        refused = _post(client, f"{_p(project.root)}/runs/{record.run_id}/resume", task="go on")
    assert refused.status_code == 409
    assert "cannot be resumed: its package does not declare metadata.strawpot.session.resume" in refused.text
