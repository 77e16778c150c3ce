"""`strawpot ui`'s guard (secret cookie, CSRF, Origin) and its pages over real run folders."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app
from dashboard.logtail import tail
from dashboard.security import COOKIE, csrf_token

SECRET = "s3cret-for-this-launch"
BASE = "http://testserver"


def _run(project: Path, run_id: str, agents: list[dict[str, object]], log: bytes = b"") -> None:
    folder = project / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True)
    for a in agents:
        ws = project / "ws" / str(a["agent_id"])
        ws.mkdir(parents=True)
        (ws / "agent.log").write_bytes(log)
        a["workspace"] = str(ws)
    (folder / "session.json").write_text(json.dumps(
        {"run_id": run_id, "role": "lead", "state": "running", "started_at": 1.0, "agents": agents}))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "strawpot.toml").write_text("")
    _run(tmp_path, "run1", [
        {"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running",
         "started_at": 1.0},
        {"agent_id": "impl-2", "role": "implementer", "agent": "stub", "parent": "lead-1", "state": "done",
         "started_at": 2.0, "ended_at": 5.0},
    ], log=b"hello from the agent\n")
    return tmp_path


def _client(project: Path, authed: bool = True) -> TestClient:
    client = TestClient(create_app(project, SECRET), base_url=BASE, follow_redirects=False)
    if authed:
        client.cookies.set(COOKIE, SECRET)
    return client


def test_the_url_secret_becomes_an_httponly_strict_cookie(project: Path) -> None:
    response = _client(project, authed=False).get(f"/?token={SECRET}")
    assert response.status_code == 303 and response.headers["location"] == "/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


@pytest.mark.parametrize("path", ["/", "/runs/run1", "/static/ui.css", "/?token=wrong"])
def test_without_the_secret_every_page_is_403(project: Path, path: str) -> None:
    assert _client(project, authed=False).get(path).status_code == 403


def test_a_state_change_needs_csrf_and_our_origin(project: Path) -> None:
    client = _client(project)
    good = {"csrf": csrf_token(SECRET)}
    assert client.post("/runs/run1/cancel", data={}, headers={"origin": BASE}).status_code == 403
    assert client.post("/runs/run1/cancel", data=good, headers={"origin": "http://evil.test"}).status_code == 403
    assert client.post("/runs/run1/cancel", data=good).status_code == 403  # no Origin at all
    assert _client(project, authed=False).post(
        "/runs/run1/cancel", data=good, headers={"origin": BASE}).status_code == 403


def test_the_run_page_shows_the_agent_tree_and_log_tail_under_a_strict_csp(project: Path) -> None:
    response = _client(project).get("/runs/run1")
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page = response.text
    assert page.index("lead-1") < page.index("impl-2") and "depth-1" in page
    assert "implementer" in page and "3.0s" in page and "hello from the agent" in page
    assert "<script>" not in page
    assert "run1" in _client(project).get("/").text


def test_a_corrupt_session_json_renders_as_unreadable(project: Path) -> None:
    folder = project / ".strawpot" / "sessions" / "broken"
    folder.mkdir()
    (folder / "session.json").write_text('{"run_id": "broken", "agents": [')
    response = _client(project).get("/runs/broken")
    assert response.status_code == 200 and "unreadable" in response.text
    assert _client(project).get("/").status_code == 200


def test_page_text_is_escaped(project: Path) -> None:
    _run(project, "run2", [{"agent_id": "x", "role": "<script>alert(1)</script>", "agent": "stub",
                            "parent": None, "state": "done"}], log=b"<img src=x onerror=alert(1)>")
    page = _client(project).get("/runs/run2").text
    assert "<script>alert" not in page and "<img src=x" not in page


def test_a_huge_log_is_tailed_not_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    with open(log, "wb") as fh:
        fh.truncate(500 * 1024 * 1024)  # a sparse 500 MB log
        fh.seek(0, 2)
        fh.write(b"line before\nthe last line\n")
    text = tail(log, limit=64)
    assert text.endswith("the last line\n") and len(text) <= 64
    assert tail(tmp_path / "missing.log") == ""


def test_ui_refuses_a_remote_host_without_allow_remote(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text("")
    done = subprocess.run([sys.executable, "-m", "strawpot.cli", "ui", "--host", "0.0.0.0", "--no-browser",
                           "--project", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--allow-remote" in done.stderr


def test_events_stream_the_tree_from_the_run_folder_until_the_run_ends(project: Path) -> None:
    session = project / ".strawpot" / "sessions" / "run1" / "session.json"
    data = json.loads(session.read_text())
    data["state"] = "succeeded"
    data["agents"][1]["state"] = "cancelled"
    session.write_text(json.dumps(data))
    with _client(project).stream("GET", "/runs/run1/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    event = json.loads(body.removeprefix("data: ").strip())
    assert event["state"] == "succeeded"
    assert [(r["agent_id"], r["depth"], r["state"]) for r in event["agents"]] == [
        ("lead-1", 0, "running"), ("impl-2", 1, "cancelled")]


def test_strawpot_ui_serves_on_loopback_behind_its_printed_secret(project: Path) -> None:
    import re
    import urllib.error
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "strawpot.cli", "ui", "--no-browser", "--project", str(project)],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", proc.stderr.readline())
        assert match, "no URL printed"
        base, token = match.groups()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/runs/run1", timeout=10)
        assert refused.value.code == 403
        request = urllib.request.Request(f"{base}/runs/run1", headers={"Cookie": f"{COOKIE}={token}"})
        with urllib.request.urlopen(request, timeout=10) as page:
            assert "impl-2" in page.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _recording_strawpot(tmp_path: Path, exit_code: int) -> list[str]:
    script = tmp_path / "fake_strawpot.py"
    script.write_text("import json, sys, pathlib\n"
                      f"pathlib.Path({str(tmp_path / 'argv.json')!r}).write_text(json.dumps(sys.argv[1:]))\n"
                      f"print('error: no live run', file=sys.stderr)\nsys.exit({exit_code})\n")
    return [sys.executable, str(script)]


def test_cancel_with_csrf_and_origin_runs_strawpot_cancel_for_the_agent(project: Path, tmp_path: Path) -> None:
    client = TestClient(create_app(project, SECRET, _recording_strawpot(tmp_path, 0)), base_url=BASE,
                        follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    response = client.post("/runs/run1/cancel", data={"csrf": csrf_token(SECRET), "agent": "impl-2"},
                           headers={"origin": BASE})
    assert response.status_code == 303 and response.headers["location"] == "/runs/run1"
    assert json.loads((tmp_path / "argv.json").read_text()) == [
        "cancel", "run1", "--project", str(project), "--agent", "impl-2"]


def test_a_failed_cancel_shows_the_commands_own_line(project: Path, tmp_path: Path) -> None:
    client = TestClient(create_app(project, SECRET, _recording_strawpot(tmp_path, 1)), base_url=BASE)
    client.cookies.set(COOKIE, SECRET)
    response = client.post("/runs/run1/cancel", data={"csrf": csrf_token(SECRET)}, headers={"origin": BASE})
    assert response.status_code == 409 and response.text == "error: no live run"


def test_prune_runs_strawpot_sessions_prune(project: Path, tmp_path: Path) -> None:
    client = TestClient(create_app(project, SECRET, _recording_strawpot(tmp_path, 0)), base_url=BASE,
                        follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    assert client.post("/prune", data={}, headers={"origin": BASE}).status_code == 403  # no CSRF token
    response = client.post("/prune", data={"csrf": csrf_token(SECRET)}, headers={"origin": BASE})
    assert response.status_code == 303
    assert json.loads((tmp_path / "argv.json").read_text()) == ["sessions", "--prune", "--project", str(project)]


def test_start_spawns_strawpot_start_headless_in_the_project(project: Path, tmp_path: Path) -> None:
    client = TestClient(create_app(project, SECRET, _recording_strawpot(tmp_path, 0)), base_url=BASE,
                        follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    form = {"csrf": csrf_token(SECRET), "role": "lead", "task": "delegate:implementer:sleep:1",
            "isolation": "worktree"}
    assert client.post("/start", data=form, headers={"origin": "http://evil.test"}).status_code == 403
    assert client.post("/start", data={**form, "isolation": "bogus"}, headers={"origin": BASE}).status_code == 400
    assert client.post("/start", data=form, headers={"origin": BASE}).status_code == 303
    argv = tmp_path / "argv.json"
    deadline = time.monotonic() + 10
    while not argv.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert json.loads(argv.read_text()) == ["start", "--headless", "--task", "delegate:implementer:sleep:1",
                                            "--role", "lead", "--isolation", "worktree"]
