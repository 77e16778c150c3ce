"""`strawpot ui` steering: an agent's askUser answered through the UI's routes, a paused run resumed, forgeries refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE, csrf_token
from orchestrator import questions
from orchestrator.projects import ProjectStore
from strawpot.commands.ui import project_settings
from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests.orchestrator._agents import resumable_agent
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

SECRET = "steer-secret"
BASE = "http://testserver"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectFixture:
    """An unbuilt project of stub agents; the runs it starts find this interpreter and no user settings."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("STRAWPOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("STRAWPOT_SESSION_ASK", raising=False)
    root = tmp_path / "proj"
    root.mkdir()
    return ProjectFixture(root, standard_roles(), standard_skills(),
                          policy={"max_depth": 3, "agent_timeout": 60, "kill_grace": 0.5})


def _client(root: Path, authed: bool = True) -> TestClient:
    """The UI as `strawpot ui` makes it in `root` (its projects from the test's own data folder)."""
    client = TestClient(create_app(root, SECRET, settings=project_settings), base_url=BASE, follow_redirects=False)
    if authed:
        client.cookies.set(COOKIE, SECRET)
    return client


def _p(root: Path) -> str:
    """The URL prefix of `root`'s pages: `/p/KEY`."""
    return home_path(root).rstrip("/")


def _post(client: TestClient, path: str, **form: str) -> Any:
    return client.post(path, data={"csrf": csrf_token(SECRET), **form}, headers={"origin": BASE})


def _until(what: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := what():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _session(root: Path) -> dict[str, Any] | None:
    runs = list((root / ".strawpot" / "sessions").glob("*/session.json"))
    return json.loads(runs[0].read_text()) if runs else None


def _ended(root: Path) -> dict[str, Any] | None:
    data = _session(root)
    return data if data and data["state"] != "running" else None


def _result(data: dict[str, Any]) -> str:
    return (Path(data["agents"][0]["workspace"]) / "result").read_text()


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`strawpot ARGS` in `root`: `sessions` through main() here, `start` and `cancel` as real processes."""
    if args[0] == "sessions":
        return strawpot_here(*args, cwd=root, extra_env=env)
    return strawpot(*args, cwd=root, extra_env=env)


def test_a_question_from_a_session_the_ui_started_is_answered_in_the_ui(project: ProjectFixture) -> None:
    project.build()
    client, base = _client(project.root), _p(project.root)
    assert _post(client, f"{base}/start", task="ask:Which <colour>?|blue then echo:done").status_code == 303
    run_id = _until(lambda: _session(project.root))["run_id"]
    run_dir = project.sessions_dir / run_id
    asked = _until(lambda: questions.read(run_dir, "1"))
    assert asked.question == "Which <colour>?" and asked.default == "blue" and asked.is_open
    assert json.loads((run_dir / "asks" / "1.json").read_text())["agent_id"] == asked.agent_id

    waiting = f'<a class="asking" href="{base}/runs/{run_id}#asks">1 question waiting for you</a>'
    assert waiting in client.get(f"{base}/").text  # the runs list marks the run that waits for an answer
    page = client.get(f"{base}/runs/{run_id}").text
    assert "Which &lt;colour&gt;?" in page and "<colour>" not in page
    assert f'action="{base}/runs/{run_id}/asks/1"' in page and "/static/steer.js" in page
    assert _post(client, f"{base}/runs/{run_id}/asks/1", text="green").status_code == 303

    ended = _until(lambda: _ended(project.root))
    assert ended["state"] == "succeeded" and _result(ended).splitlines() == ["green", "done"]
    assert "Answered: <b>green</b>" in client.get(f"{base}/runs/{run_id}").text
    assert 'class="asking"' not in client.get(f"{base}/").text
    second = _post(client, f"{base}/runs/{run_id}/asks/1", text="red")
    assert second.status_code == 409 and "answered already" in second.text


def test_an_unanswered_question_gets_its_default_when_the_wait_ends(project: ProjectFixture) -> None:
    project.build()
    done = _cli(project.root, "start", "--headless", "--task", "ask:Ship it?|yes",
                STRAWPOT_SESSION_ASK="run", STRAWPOT_SESSION_ASK_TIMEOUT="0.5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "yes"
    data = _session(project.root)
    assert data is not None
    [question] = questions.questions(project.sessions_dir / data["run_id"])
    assert question.answered_by == "timeout" and question.answer == "yes"
    client, base = _client(project.root), _p(project.root)
    assert "Nobody answered in time" in client.get(f"{base}/runs/{data['run_id']}").text
    late = _post(client, f"{base}/runs/{data['run_id']}/asks/1", text="no")
    assert (late.status_code, late.text) == (409, "question 1 was answered already, by timeout ('yes')")


def test_the_resume_button_resumes_a_paused_run(project: ProjectFixture, tmp_path: Path) -> None:
    project.build(resumable_agent(tmp_path))
    first = _cli(project.root, "start", "--headless", "--task", "session then pause")
    assert first.returncode == 0, first.stderr
    data = _session(project.root)
    assert data is not None and data["state"] == "paused"
    run_id, root_agent = data["run_id"], data["agents"][0]["agent_id"]
    client, base = _client(project.root), _p(project.root)
    assert f'action="{base}/runs/{run_id}/resume"' in client.get(f"{base}/runs/{run_id}").text
    assert _post(client, f"{base}/runs/{run_id}/resume", agent=root_agent, task=" ").status_code == 400

    assert _post(client, f"{base}/runs/{run_id}/resume", agent=root_agent,
                 task="session then ask:How?|quietly then echo:carried on").status_code == 303
    # The resumed run asks through the run folder too (the UI launches resume as it launches start).
    asked = _until(lambda: questions.read(project.sessions_dir / run_id, "1"))
    assert asked.question == "How?" and asked.is_open
    assert _post(client, f"{base}/runs/{run_id}/asks/1", text="loudly").status_code == 303
    ended = _until(lambda: _ended(project.root))
    assert ended["state"] == "succeeded"
    assert _result(ended).splitlines() == [f"resumed {data['agents'][0]['session_id']}", "loudly", "carried on"]
    assert f'action="{base}/runs/{run_id}/resume"' not in client.get(f"{base}/runs/{run_id}").text

    refused = _post(client, f"{base}/runs/{run_id}/resume", agent="nobody", task="x")
    assert refused.status_code == 409 and "has no agent 'nobody'" in refused.text


def _fake_run(root: Path, state: str = "running") -> Path:
    run_dir = root / ".strawpot" / "sessions" / "run1"
    run_dir.mkdir(parents=True)
    (root / "strawpot.toml").write_text("")
    (run_dir / "session.json").write_text(json.dumps({
        "run_id": "run1", "role": "lead", "state": state, "started_at": 1.0, "agents": [
            {"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running"}]}))
    questions.post(run_dir, "lead-1", "<img src=x onerror=alert(1)>", ["yes", "no"], "", "to be sure")
    return run_dir


FORGED_POSTS = ["/runs/run1/asks/1", "/runs/run1/resume", "/memory/forget"]


@pytest.mark.parametrize("path", FORGED_POSTS)
def test_forged_posts_are_refused(tmp_path: Path, path: str) -> None:
    run_dir = _fake_run(tmp_path)
    path = _p(tmp_path) + path
    form = {"csrf": csrf_token(SECRET), "text": "yes", "task": "x", "entry": "e"}
    client = _client(tmp_path)
    assert client.post(path, data={**form, "csrf": ""}, headers={"origin": BASE}).status_code == 403
    assert client.post(path, data=form, headers={"origin": "http://evil.test"}).status_code == 403
    assert client.post(path, data=form).status_code == 403  # no Origin
    assert _client(tmp_path, authed=False).post(path, data=form, headers={"origin": BASE}).status_code == 403
    assert questions.read(run_dir, "1").is_open  # type: ignore[union-attr]


@pytest.mark.parametrize(("ask_id", "form", "status", "line"), [
    ("2", {"text": "yes"}, 404, "no question '2' in this run"),
    ("..%2F..%2Fsession.json", {"text": "yes"}, 404, "Not Found"),  # no route takes a slash
    ("%2E%2E", {"text": "yes"}, 404, "no question '..' in this run"),
    ("1.answer", {"text": "yes"}, 404, "no question '1.answer' in this run"),
    ("1", {"text": "  "}, 400, "the answer is empty: pick a choice or type one"),
])
def test_bad_answers_are_one_line_refusals(tmp_path: Path, ask_id: str, form: dict[str, str], status: int,
                                           line: str) -> None:
    run_dir = _fake_run(tmp_path)
    response = _post(_client(tmp_path), f"{_p(tmp_path)}/runs/run1/asks/{ask_id}", **form)
    assert (response.status_code, response.text) == (status, line)
    assert questions.read(run_dir, "1").is_open  # type: ignore[union-attr]
    assert sorted(p.name for p in (run_dir / "asks").iterdir()) == [".lock", "1.json"]


def test_an_answer_goes_only_to_the_project_its_url_names(tmp_path: Path) -> None:
    run_dir = _fake_run(tmp_path / "a")
    other = tmp_path / "b"
    other.mkdir()
    ProjectStore().record(other)  # a project the UI lists, without this run
    client = _client(tmp_path / "a")
    elsewhere = _post(client, f"{_p(other)}/runs/run1/asks/1", text="yes")
    assert (elsewhere.status_code, elsewhere.text) == (404, "no run 'run1'")
    assert _post(client, "/p/nosuch-00000000/runs/run1/asks/1", text="yes").status_code == 404
    assert _post(client, f"{_p(other)}/runs/run1/resume", task="x").status_code == 404
    assert questions.read(run_dir, "1").is_open  # type: ignore[union-attr]


def test_a_choice_button_answers_and_the_question_is_shown_inert(tmp_path: Path) -> None:
    run_dir = _fake_run(tmp_path)
    client, base = _client(tmp_path), _p(tmp_path)
    page = client.get(f"{base}/runs/run1").text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page
    assert 'name="choice" value="yes"' in page and "why: to be sure" in page
    response = _post(client, f"{base}/runs/run1/asks/1", choice="no", text="")
    assert response.status_code == 303 and response.headers["location"] == f"{base}/runs/run1#asks"
    answered = questions.read(run_dir, "1")
    assert answered is not None and answered.answer == "no" and answered.answered_by == "ui"


def test_the_questions_stream_until_the_run_ends(tmp_path: Path) -> None:
    run_dir = _fake_run(tmp_path, state="succeeded")
    base = _p(tmp_path)
    with _client(tmp_path).stream("GET", f"{base}/runs/run1/asks/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    event = json.loads(body.removeprefix("data: ").strip())
    assert event["final"] is True and [a["id"] for a in event["asks"]] == ["1"]
    assert event["asks"][0]["state"] == "open-final" and "&lt;img" in event["asks"][0]["html"]
    assert _client(tmp_path).get(f"{base}/runs/nope/asks/events").status_code == 404
    page = _client(tmp_path).get(f"{base}/runs/run1").text
    assert "Not answered: the run is over" in page and f'action="{base}/runs/run1/asks/1"' not in page
    too_late = _post(_client(tmp_path), f"{base}/runs/run1/asks/1", text="yes")
    assert (too_late.status_code, too_late.text) == (409, "run run1 is succeeded: no agent waits for this answer any more")
    assert questions.read(run_dir, "1").is_open  # type: ignore[union-attr]


def test_the_cli_twin_shows_and_answers_a_waiting_question(project: ProjectFixture) -> None:
    project.build()
    run = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "ask:Which branch?|main"], cwd=project.root,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "STRAWPOT_SESSION_ASK": "run"})
    try:
        run_id = _until(lambda: _session(project.root))["run_id"]
        _until(lambda: questions.read(project.sessions_dir / run_id, "1"))
        shown = _cli(project.root, "sessions", "show", run_id)
        assert "question 1 from orchestrator-" in shown.stdout and ": Which branch? (open)" in shown.stdout
        unknown = _cli(project.root, "sessions", "answer", run_id, "9", "x")
        assert unknown.returncode == 2 and "no question '9' in this run" in unknown.stderr
        answered = _cli(project.root, "sessions", "answer", run_id, "1", "release")
        assert answered.returncode == 0, answered.stderr
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    assert out.strip() == "release"
    again = _cli(project.root, "sessions", "answer", run_id, "1", "other")
    assert again.returncode == 1 and "answered already, by cli ('release')" in again.stderr


def test_cancelling_a_run_ends_its_waiting_question_at_once(project: ProjectFixture) -> None:
    project.build()
    run = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "ask:Still there?"], cwd=project.root,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "STRAWPOT_SESSION_ASK": "run"})  # the default wait: 600 s
    try:
        run_id = _until(lambda: _session(project.root))["run_id"]
        _until(lambda: questions.read(project.sessions_dir / run_id, "1"))
        assert _cli(project.root, "cancel", run_id).returncode == 0
        try:  # a question the cancel left waiting would hold the run for its 600 s
            run.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the cancelled run did not end within 120 s: its question still waited")
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    ended = questions.read(project.sessions_dir / run_id, "1")
    assert ended is not None and ended.answered_by == "ended" and ended.answer is None
    assert (_session(project.root) or {})["state"] == "cancelled"
