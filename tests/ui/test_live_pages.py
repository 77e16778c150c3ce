"""The home and project pages kept open: state colours, task, summary and exit code in the lists, the start form's
pickers from the lock, hostile text escaped, and the server-sent events that keep both pages live."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from starlette.testclient import TestClient

from dashboard import live
from dashboard.app import create_app, home_path
from dashboard.security import COOKIE, cookie_name, csrf_token
from orchestrator import questions
from orchestrator.projects import ProjectStore
from strawpot.commands.ui import STOP_GRACE, project_settings
from strawpot.model.fs import atomic_write
from tests._cli import STRAWPOT
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.ui._live import PATIENCE, serving

SECRET = "live-pages-secret"
HOSTILE = "<script>alert(1)</script>"


def _run(root: Path, run_id: str, state: str = "running", agents: tuple[dict[str, Any], ...] = (),
         log: str = "", **extra: Any) -> Path:
    """A run folder as the orchestrator writes it; each agent's workspace holds `log` as its agent.log."""
    folder = root / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for a in agents:
        ws = root / "ws" / run_id / a["agent_id"]
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "agent.log").write_text(log)
        listed.append({"role": "lead", "agent": "stub-agent", "parent": None, "state": "running",
                       "started_at": time.time() - 75, "workspace": str(ws), **a})
    record = {"run_id": run_id, "role": "lead", "task": "do it", "state": state, "started_at": time.time() - 75,
              "agents": listed, **extra}
    atomic_write(folder / "session.json", json.dumps(record), durable=False)
    return folder


def _project(tmp_path: Path, name: str = "proj") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    return root


def _client(home: Path | None, data: Path) -> TestClient:
    client = TestClient(create_app(home, SECRET, data_dir=data, settings=project_settings), follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    return client


def _p(root: Path) -> str:
    return home_path(root).rstrip("/")


@contextlib.contextmanager
def _events(base: str, path: str) -> Iterator[Iterator[dict[str, Any]]]:
    """The server-sent events of `path` on the real server at `base`, one parsed `data:` at a time."""
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=PATIENCE)
    conn.request("GET", path, headers={"Cookie": f"{cookie_name(url.port)}={SECRET}"})
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")

    def read() -> Iterator[dict[str, Any]]:
        while line := response.fp.readline():
            if line.startswith(b"data: "):
                yield json.loads(line[6:])

    try:
        yield read()
    finally:
        conn.close()


def _next_where(events: Iterator[dict[str, Any]], what: str, check: Any) -> dict[str, Any]:
    """The first event `check` accepts (the stream sends one per change)."""
    for event in events:
        if check(event):
            return event
    raise AssertionError(f"the stream ended before {what}")


def test_the_runs_list_shows_state_colours_task_summary_duration_and_exit_code(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    now = 1_800_000_000.0  # the list's clock, frozen: a running run's duration is exact however slow the page is
    monkeypatch.setattr(live, "time", SimpleNamespace(time=lambda: now))
    root = _project(tmp_path)
    _run(root, "run_20260101_100000_aaaaaa", "succeeded", task="write the release notes", exit_code=0,
         summary="Wrote   the notes\nfor 1.2", started_at=1000.0, ended_at=1065.5, agents=({"agent_id": "a", "agent": "coder"},))
    _run(root, "run_20260101_110000_bbbbbb", "failed", exit_code=3, ended_at=time.time() - 70)
    _run(root, "run_20260101_120000_cccccc", "running", started_at=now - 75)
    page = _client(root, tmp_path / "data").get(f"{_p(root)}/").text
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr data-run="([^"]+)">.*?</tr>', page, re.S)}
    done, failed, going = (rows[f"run_20260101_{t}"] for t in ("100000_aaaaaa", "110000_bbbbbb", "120000_cccccc"))
    assert 'class="state state-succeeded">succeeded' in done and "<td>0</td>" in done and ">coder<" in done
    assert "write the release notes" in done and "Wrote the notes for 1.2" in done and ">1m 05s<" in done
    assert 'class="state state-failed">failed' in failed and "<td>3</td>" in failed
    assert 'class="state state-running">running' in going and f'class="elapsed" data-since="{now - 75}">1m 15s<' in going
    run_page = _client(root, tmp_path / "data").get(f"{_p(root)}/runs/run_20260101_100000_aaaaaa").text
    assert 'class="state state-succeeded" id="run-state"' in run_page


def test_a_long_summary_is_shortened_in_the_list(tmp_path: Path) -> None:
    from dashboard.live import elapsed, excerpt

    assert excerpt("word " * 100, 40) == ("word " * 8).strip() + "…" and len(excerpt("x" * 500, 140)) == 140
    assert [elapsed(s) for s in (0, 59.9, 65, 3600 + 7 * 60 + 3)] == ["0s", "59s", "1m 05s", "1h 07m"]
    root = _project(tmp_path)
    _run(root, "run_20260101_100000_aaaaaa", "succeeded", summary="x" * 5000)
    page = _client(root, tmp_path / "data").get(f"{_p(root)}/").text
    assert "x" * 139 + "…" in page and "x" * 141 not in page


def test_hostile_task_summary_and_log_render_as_text_on_every_live_page(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _run(root, "run_20260101_100000_aaaaaa", "succeeded", task=HOSTILE, summary=HOSTILE)
    folder = _run(root, "run_20260101_110000_bbbbbb", "running", task=HOSTILE, log=f"{HOSTILE}\n",
                  agents=({"agent_id": "lead-1", "role": HOSTILE, "agent": HOSTILE},))
    questions.post(folder, "lead-1", HOSTILE, [HOSTILE], HOSTILE, HOSTILE)
    client = _client(root, tmp_path / "data")
    for page in (client.get("/").text, client.get(f"{_p(root)}/").text):
        assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    with serving(create_app(root, SECRET, data_dir=tmp_path / "data")) as base:
        for path in ("/events", f"{_p(root)}/events"):
            with _events(base, path) as events:
                text = json.dumps(next(events))
            assert "<script>alert" not in text and "&lt;script&gt;" in text


def test_the_start_form_picks_role_and_runtime_from_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("STRAWPOT_AGENT_REVIEWER", "other-agent")  # `start` would bind reviewer so: the picker says
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills()).build()
    page = _client(root, tmp_path / "data").get(f"{_p(root)}/").text
    role = re.search(r'<select id="start-role" name="role">(.*?)</select>', page, re.S)
    runtime = re.search(r'<select id="start-runtime" name="runtime">(.*?)</select>', page, re.S)
    assert role and runtime
    assert re.findall(r'<option value="([^"]*)" data-agent="([^"]*)">([^<]*)<', role.group(1)) == [
        ("", "stub-agent", "default: orchestrator"), ("implementer", "stub-agent", "implementer"),
        ("lead", "stub-agent", "lead"), ("orchestrator", "stub-agent", "orchestrator"),
        ("reviewer", "other-agent", "reviewer")]
    assert re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)<', runtime.group(1)) == [
        ("", "default: stub-agent"), ("stub-agent", "stub-agent")]
    assert "selected" not in role.group(1) + runtime.group(1)  # the empty default is the one chosen

    (root / "strawpot.lock").unlink()  # no lock: the pickers hold the default alone, the page says why
    page = _client(root, tmp_path / "data").get(f"{_p(root)}/").text
    role = re.search(r'<select id="start-role" name="role">(.*?)</select>', page, re.S)
    assert role and role.group(1).count("<option") == 1 and "default: orchestrator" in role.group(1)
    assert re.search(r'id="pickers-problem">The pickers offer the defaults only: [^<]*strawpot.lock: no lockfile', page)


def test_the_project_page_streams_new_runs_state_changes_start_errors_and_waiting_questions(tmp_path: Path) -> None:
    root = _project(tmp_path)
    failing = tmp_path / "failing_strawpot.py"
    failing.write_text("import sys\nprint('error: no role to start', file=sys.stderr)\n"
                       "print('hint: pass --role', file=sys.stderr)\nsys.exit(2)\n")
    app = create_app(root, SECRET, [sys.executable, str(failing)], data_dir=tmp_path / "data")
    with serving(app) as base, _events(base, f"{_p(root)}/events") as events:
        first = next(events)
        assert first["hidden"] == {"runs": True, "no-runs": False, "waiting": True}
        assert first["items"] == {"waiting-list": []}

        folder = _run(root, "run_20260101_100000_aaaaaa", "running", task="ship it",
                      agents=({"agent_id": "lead-1"},))
        seen = _next_where(events, "the new run", lambda e: "run_20260101_100000_aaaaaa" in e["html"]["runs-body"])
        assert "state-running" in seen["html"]["runs-body"] and "ship it" in seen["html"]["runs-body"]

        questions.post(folder, "lead-1", "Which database?", ["postgres", "sqlite"], "sqlite", "the task does not say")
        seen = _next_where(events, "the question", lambda e: e["items"]["waiting-list"])
        [item] = seen["items"]["waiting-list"]
        assert item["id"] == "wait-run_20260101_100000_aaaaaa-1" and "Which database?" in item["html"]
        assert 'value="postgres"' in item["html"] and seen["hidden"]["waiting"] is False
        assert "1 question waiting for you" in seen["html"]["runs-body"]

        questions.answer(folder, "1", "postgres", "ui")
        _next_where(events, "the answered question to go", lambda e: not e["items"]["waiting-list"])

        record = json.loads((folder / "session.json").read_text())
        atomic_write(folder / "session.json", json.dumps(
            {**record, "state": "succeeded", "exit_code": 0, "ended_at": time.time(), "summary": "Shipped."}),
            durable=False)
        seen = _next_where(events, "the run's end", lambda e: "state-succeeded" in e["html"]["runs-body"])
        assert "Shipped." in seen["html"]["runs-body"] and "data-since" not in seen["html"]["runs-body"]

        # A start that fails: its error line appears without a reload.
        assert _post(base, f"{_p(root)}/start", {"task": "x", "csrf": csrf_token(SECRET)}) == 303
        seen = _next_where(events, "the start error", lambda e: e["html"]["start-error"])
        assert "The last session started here failed: error: no role to start (hint: pass --role)" in \
            seen["html"]["start-error"]


def _post(base: str, path: str, form: dict[str, str]) -> int:
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=PATIENCE)
    conn.request("POST", path, urlencode(form), headers={
        "Cookie": f"{cookie_name(url.port)}={SECRET}", "Origin": base, "Content-Type": "application/x-www-form-urlencoded"})
    try:
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_home_feed_shows_running_agents_across_projects_and_recent_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    one, two = _project(tmp_path, "one"), _project(tmp_path, "two")
    ProjectStore(data).record(two)
    _run(one, "run_20260101_100000_aaaaaa", "running", task="triage issues",
         agents=({"agent_id": "lead-1", "role": "lead", "agent": "claude-code"},
                 {"agent_id": "impl-2", "role": "implementer", "agent": "codex", "parent": "lead-1"},
                 {"agent_id": "rev-3", "role": "reviewer", "parent": "lead-1", "state": "succeeded"}),
         log="".join(f"line {i}\n" for i in range(1, 10)))
    _run(two, "run_20260101_090000_bbbbbb", "succeeded", summary="All green.", exit_code=0, started_at=1000.0,
         ended_at=1010.0)
    page = _client(one, data).get("/").text
    feed = re.search(r'<ul id="activity" class="activity">(.*?)</ul>', page, re.S)
    assert feed is not None
    agents = re.findall(r'<li class="agent" data-agent="([^"]+)">', feed.group(1))
    assert sorted(agents) == ["impl-2", "lead-1"]  # the ended reviewer is not running
    assert 'class="role">implementer<' in feed.group(1) and 'class="runtime">codex<' in feed.group(1)
    assert "line 6\nline 7\nline 8\nline 9</pre>" in feed.group(1) and "line 5" not in feed.group(1)
    assert re.search(r'data-since="[\d.]+">1m 1\ds<', feed.group(1)) and "triage issues" in feed.group(1)
    recent = re.search(r'<tbody id="recent-body">(.*?)</tbody>', page, re.S)
    assert recent is not None and recent.group(1).index("run_20260101_100000") < recent.group(1).index("All green.")
    assert 'id="idle" class="dim" hidden' in page

    with serving(create_app(one, SECRET, data_dir=data)) as base, _events(base, "/events") as events:
        assert "impl-2" in next(events)["html"]["activity"]
        folder = one / ".strawpot" / "sessions" / "run_20260101_100000_aaaaaa"
        record = json.loads((folder / "session.json").read_text())
        atomic_write(folder / "session.json", json.dumps({**record, "state": "cancelled"}), durable=False)
        seen = _next_where(events, "the feed to empty", lambda e: e["hidden"]["idle"] is False)
        assert seen["html"]["activity"].strip() == "" and "state-cancelled" in seen["html"]["recent-body"]


def test_a_run_whose_strawpot_process_died_is_not_shown_as_at_work(tmp_path: Path) -> None:
    """A `start` killed with SIGKILL leaves its run recorded as running: no feed entry, no ticking, no question
    at the top (nobody waits for the answer), and the list says why."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    root = _project(tmp_path)
    folder = _run(root, "run_20260101_100000_aaaaaa", "running", owner_pid=dead.pid, agents=({"agent_id": "lead-1"},))
    questions.post(folder, "lead-1", "Still there?", [], "", "")
    alive = _run(root, "run_20260101_110000_bbbbbb", "running", owner_pid=os.getpid(), agents=({"agent_id": "x-2"},))
    questions.post(alive, "x-2", "Go on?", [], "", "")
    client = _client(root, tmp_path / "data")
    home = client.get("/").text
    assert 'data-agent="x-2"' in home and 'data-agent="lead-1"' not in home
    page = client.get(f"{_p(root)}/").text
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr data-run="([^"]+)">.*?</tr>', page, re.S)}
    gone, going = rows["run_20260101_100000_aaaaaa"], rows["run_20260101_110000_bbbbbb"]
    assert "but its strawpot process is gone" in gone and "data-since" not in gone and "waiting for you" not in gone
    assert "gone" not in going and "data-since" in going and "1 question waiting for you" in going
    assert "Go on?" in page and "Still there?" not in page


def test_strawpot_ui_stops_on_sigterm_while_a_live_page_is_open(tmp_path: Path) -> None:
    """The home page's stream never ends by itself: stopping the UI must not wait for the browser to leave."""
    root = _project(tmp_path)
    env = {**os.environ, "STRAWPOT_DATA_DIR": str(tmp_path / "data"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config")}
    proc = subprocess.Popen([*STRAWPOT, "ui", "--no-browser", "--project", str(root)], stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stderr is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\S*\?token=(\S+)", proc.stderr.readline())
        assert match, "no URL printed"
        base, token = match.groups()
        url = urlsplit(base)
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=PATIENCE)
        conn.request("GET", "/events", headers={"Cookie": f"{cookie_name(url.port)}={token}"})
        response = conn.getresponse()
        assert response.status == 200 and response.fp.readline()  # the page is open and fed
        proc.terminate()
        asked = time.monotonic()
        try:  # a UI that waited for the page to go would never stop: the page stays open until the end
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("`strawpot ui` did not stop on SIGTERM within 60 s while a live page was open")
        assert code == 0
        # docs/ui.md: it stops "within 2 seconds even while pages are open"; uvicorn's grace is that constant, and
        # the wall-clock bound only rules out a grace of half a minute or more on a loaded machine
        assert STOP_GRACE == 2 and time.monotonic() - asked < 30
        assert "stopped the UI" in proc.stderr.read()
        conn.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
