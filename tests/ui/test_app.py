"""`strawpot ui`'s guard (secret cookie, CSRF, Origin) and its pages over real run folders."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.logtail import tail
from dashboard.security import COOKIE, cookie_name, csrf_token
from tests._cli import STRAWPOT, strawpot

SECRET = "s3cret-for-this-launch"
BASE = "http://testserver"


def _run(project: Path, run_id: str, agents: list[dict[str, object]], log: bytes = b"", **extra: object) -> None:
    folder = project / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True)
    for a in agents:
        ws = project / "ws" / str(a["agent_id"])
        ws.mkdir(parents=True)
        (ws / "agent.log").write_bytes(log)
        a["workspace"] = str(ws)
    (folder / "session.json").write_text(json.dumps(
        {"run_id": run_id, "role": "lead", "state": "running", "started_at": 1.0, "agents": agents, **extra}))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "strawpot.toml").write_text("")
    _run(root, "run1", [
        {"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None, "state": "running",
         "started_at": 1.0},
        {"agent_id": "impl-2", "role": "implementer", "agent": "stub", "parent": "lead-1", "state": "succeeded",
         "started_at": 2.0, "ended_at": 5.0},
    ], log=b"hello from the agent\n")
    return root


def _client(project: Path | None, authed: bool = True, command: list[str] | None = None) -> TestClient:
    data = (project or Path("/nonexistent")).parent / "data"
    client = TestClient(create_app(project, SECRET, command, data_dir=data), base_url=BASE, follow_redirects=False)
    if authed:
        client.cookies.set(COOKIE, SECRET)
    return client


def _p(project: Path) -> str:
    return home_path(project).rstrip("/")


def test_the_url_secret_becomes_an_httponly_strict_cookie(project: Path) -> None:
    response = _client(project, authed=False).get(f"{_p(project)}/?token={SECRET}")
    assert response.status_code == 303 and response.headers["location"] == f"{_p(project)}/"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_two_uis_on_one_host_each_keep_their_own_cookie(project: Path) -> None:
    # A browser keeps one cookie jar per host whatever the port: the second UI's login must not log out the first.
    apps = {port: create_app(project, f"secret-{port}", data_dir=project.parent / "data") for port in (5001, 5002)}

    async def by_port(scope: Any, receive: Any, send: Any) -> None:
        await apps[scope["server"][1]](scope, receive, send)

    browser = TestClient(by_port, follow_redirects=False)
    for port in apps:
        assert browser.get(f"http://127.0.0.1:{port}/?token=secret-{port}").status_code == 303
    for port in apps:
        assert browser.get(f"http://127.0.0.1:{port}/").status_code == 200, port


@pytest.mark.parametrize("path", ["/", "/schedules", "{p}/", "{p}/runs/run1", "/static/ui.css", "/?token=wrong"])
def test_without_the_secret_every_page_is_403(project: Path, path: str) -> None:
    assert _client(project, authed=False).get(path.format(p=_p(project))).status_code == 403


@pytest.mark.parametrize("action", ["/runs/run1/cancel", "/start", "/prune"])
def test_every_state_change_refuses_a_forged_request(project: Path, tmp_path: Path, action: str) -> None:
    client = _client(project, command=_recording_strawpot(tmp_path, 0))
    url = _p(project) + action
    good = {"csrf": csrf_token(SECRET), "task": "echo:x", "agent": "impl-2"}
    no_token = client.post(url, data={k: v for k, v in good.items() if k != "csrf"}, headers={"origin": BASE})
    foreign = client.post(url, data=good, headers={"origin": "http://evil.test"})
    no_origin = client.post(url, data=good)
    no_secret = _client(project, authed=False).post(url, data=good, headers={"origin": BASE})
    assert [r.status_code for r in (no_token, foreign, no_origin, no_secret)] == [403] * 4
    assert not (tmp_path / "argv.json").exists()  # nothing was run
    real = client.post(url, data=good, headers={"origin": BASE})  # the real one goes through the guard
    if action.endswith("/cancel"):  # to run1's own refusal: its record names no Denden server to ask
        assert (real.status_code, real.text.split(":")[0]) == (409, "run run1"), real.text
    else:
        assert real.status_code == 303


def test_the_run_page_shows_the_agent_tree_and_log_tail_under_a_strict_csp(project: Path) -> None:
    response = _client(project).get(f"{_p(project)}/runs/run1")
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page = response.text
    assert page.index("lead-1") < page.index("impl-2") and "depth-1" in page
    assert "implementer" in page and "3.0s" in page and "hello from the agent" in page
    assert "<script>" not in page
    # a cancel button for the running agent, none for the one that ended
    assert page.count('name="agent" value="lead-1"') == 1 and 'name="agent" value="impl-2"' not in page


def test_the_run_page_shows_inputs_memory_and_the_worktree_as_recorded(project: Path) -> None:
    inputs = {"lock_sha256": "ab" * 32, "packages": {"role:lead": {"version": "1.2.0", "archive_sha256": None}},
              "settings": {"memory.provider": "builtin", "memory.max_prompt_bytes": 4096}}
    isolation = {"kind": "worktree", "working_dir": "/w/run2", "state": "kept", "branch": "strawpot/run2",
                 "path": "/w/run2", "merge": "merge"}
    _run(project, "run2", [{"agent_id": "a", "role": "lead", "agent": "stub", "parent": None,
                            "state": "succeeded"}], inputs=inputs, isolation=isolation, task="fix the bug")
    trace = project / ".strawpot" / "sessions" / "run2" / "trace.jsonl"
    trace.write_text(json.dumps({"ts": 1, "event": "memory_failed", "message": "memory provider 'x' failed"}) + "\n")
    page = _client(project).get(f"{_p(project)}/runs/run2").text
    assert "ab" * 32 in page and "role:lead" in page and "1.2.0" in page
    assert "Provider <b>builtin</b>" in page and "4096 bytes" in page and "memory provider &#39;x&#39; failed" in page
    assert "strawpot/run2" in page and '<b id="worktree-state">kept</b>' in page and "fix the bug" in page


def test_a_corrupt_session_json_renders_as_unreadable(project: Path) -> None:
    folder = project / ".strawpot" / "sessions" / "broken"
    folder.mkdir()
    (folder / "session.json").write_text('{"run_id": "broken", "agents": [')
    response = _client(project).get(f"{_p(project)}/runs/broken")
    assert response.status_code == 200 and "unreadable" in response.text
    listing = _client(project).get(f"{_p(project)}/")
    assert listing.status_code == 200 and "broken" in listing.text and "session.json unreadable" in listing.text


def test_page_text_is_escaped(project: Path) -> None:
    _run(project, "run2", [{"agent_id": "x", "role": "<script>alert(1)</script>", "agent": "stub",
                            "parent": None, "state": "succeeded"}], log=b"<img src=x onerror=alert(1)>")
    page = _client(project).get(f"{_p(project)}/runs/run2").text
    assert "<script>alert" not in page and "<img src=x" not in page


def test_the_runs_list_shows_the_newest_fifty_and_pages_on(project: Path) -> None:
    for i in range(60):
        run_id = time.strftime("run_%Y%m%d_%H%M%S_", time.gmtime(1.7e9 + 60 * i)) + f"{i:06x}"
        _run(project, run_id, [], state="succeeded")
    first = _client(project).get(f"{_p(project)}/").text
    assert first.count("/runs/run_") == 50 and "of 61, newest first" in first and "?page=2" in first
    assert f"{0 + 59:06x}" in first and "run1\"" not in first  # newest first; run1 (no time in its id) is oldest
    second = _client(project).get(f"{_p(project)}/?page=2").text
    assert second.count("/runs/run") == 11 and "/runs/run1\"" in second


def test_the_runs_list_follows_a_changed_session_json(project: Path) -> None:
    client = _client(project)
    assert "running" in client.get(f"{_p(project)}/").text
    session = project / ".strawpot" / "sessions" / "run1" / "session.json"
    data = json.loads(session.read_text())
    data["state"] = "cancelled"
    session.write_text(json.dumps(data))
    page = client.get(f"{_p(project)}/").text
    assert "cancelled" in page and "running" not in page


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
    done = strawpot("ui", "--host", "0.0.0.0", "--no-browser", "--project", tmp_path, cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "--allow-remote" in done.stderr


def test_events_stream_the_tree_and_logs_from_the_run_folder_until_the_run_ends(project: Path) -> None:
    session = project / ".strawpot" / "sessions" / "run1" / "session.json"
    data = json.loads(session.read_text())
    data["state"] = "succeeded"
    data["agents"][1]["state"] = "cancelled"
    session.write_text(json.dumps(data))
    with _client(project).stream("GET", f"{_p(project)}/runs/run1/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    first, end = body.strip().split("\n\n")
    event = json.loads(first.removeprefix("data: "))
    assert end.startswith("event: end")  # so the browser closes the stream instead of reconnecting
    assert event["state"] == "succeeded"
    assert [(r["agent_id"], r["depth"], r["state"], r["active"]) for r in event["agents"]] == [
        ("lead-1", 0, "running", True), ("impl-2", 1, "cancelled", False)]
    assert event["logs"] == [{"agent_id": "lead-1", "log": "hello from the agent\n"},
                             {"agent_id": "impl-2", "log": "hello from the agent\n"}]


def test_strawpot_ui_opens_on_its_project_behind_its_printed_secret(project: Path, tmp_path: Path) -> None:
    import os
    import re
    import urllib.error
    import urllib.request

    env = {**os.environ, "STRAWPOT_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen([*STRAWPOT, "ui", "--no-browser", "--project", str(project)],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+)(/\S*)\?token=(\S+)", proc.stderr.readline())
        assert match, "no URL printed"
        base, path, token = match.groups()
        assert path == home_path(project)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}{path}runs/run1", timeout=60)
        assert refused.value.code == 403
        cookie = f"{cookie_name(int(base.rsplit(':', 1)[1]))}={token}"
        request = urllib.request.Request(f"{base}{path}runs/run1", headers={"Cookie": cookie})
        with urllib.request.urlopen(request, timeout=60) as page:
            assert "impl-2" in page.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _recording_strawpot(tmp_path: Path, exit_code: int) -> list[str]:
    script = tmp_path / "fake_strawpot.py"
    # written aside, then renamed: the test never reads it half-written
    script.write_text("import json, os, sys, pathlib\n"
                      f"pathlib.Path({str(tmp_path / 'argv.tmp')!r}).write_text(json.dumps(sys.argv[1:]))\n"
                      f"os.replace({str(tmp_path / 'argv.tmp')!r}, {str(tmp_path / 'argv.json')!r})\n"
                      f"print('error: no live run', file=sys.stderr)\nsys.exit({exit_code})\n")
    return [sys.executable, str(script)]


def _argv(tmp_path: Path) -> list[str]:
    argv = tmp_path / "argv.json"
    deadline = time.monotonic() + 60
    while not argv.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert argv.exists(), "the UI never ran the command"
    return json.loads(argv.read_text())  # type: ignore[no-any-return]


def test_start_spawns_strawpot_start_headless_in_the_project(project: Path, tmp_path: Path) -> None:
    client = _client(project, command=_recording_strawpot(tmp_path, 0))
    form = {"csrf": csrf_token(SECRET), "role": "lead", "task": "delegate:implementer:sleep:1",
            "isolation": "worktree"}
    url = f"{_p(project)}/start"
    assert client.post(url, data={**form, "isolation": "bogus"}, headers={"origin": BASE}).status_code == 400
    assert client.post(url, data={**form, "params": "model"}, headers={"origin": BASE}).status_code == 400
    assert not (tmp_path / "argv.json").exists()  # a refused form spawns nothing
    assert client.post(url, data=form, headers={"origin": BASE}).status_code == 303
    assert _argv(tmp_path) == ["start", "--headless", "--task", "delegate:implementer:sleep:1",
                               "--role", "lead", "--isolation", "worktree"]
    (tmp_path / "argv.json").unlink()
    full = {**form, "runtime": "stub-agent", "params": "model=fast\r\n\r\nturns = 3\n"}
    assert client.post(url, data=full, headers={"origin": BASE}).status_code == 303
    assert _argv(tmp_path) == ["start", "--headless", "--task", "delegate:implementer:sleep:1", "--role", "lead",
                               "--runtime", "stub-agent", "--param", "model=fast", "--param", "turns = 3",
                               "--isolation", "worktree"]


def test_every_field_of_the_start_form_has_its_label(project: Path) -> None:
    page = _client(project).get(f"{_p(project)}/").text
    form = re.search(r'<form class="start".*?</form>', page, re.S)
    assert form is not None
    fields = re.findall(r'<(?:input|textarea|select) id="([^"]+)" name="([^"]+)"', form.group(0))
    assert [name for _, name in fields] == ["task", "role", "runtime", "params", "isolation"]
    labelled = set(re.findall(r'<label for="([^"]+)">[^<]+</label>', form.group(0)))
    assert {field_id for field_id, _ in fields} == labelled


def test_a_project_no_one_recorded_is_404(project: Path) -> None:
    response = _client(project).get("/p/elsewhere-00000000/")
    assert response.status_code == 404 and "no project" in response.text


def test_a_session_that_fails_to_start_says_why_on_the_project_page(project: Path, tmp_path: Path) -> None:
    client = _client(project, command=_recording_strawpot(tmp_path, 5))
    assert client.post(f"{_p(project)}/start", data={"csrf": csrf_token(SECRET), "task": "echo:x"},
                       headers={"origin": BASE}).status_code == 303
    _argv(tmp_path)
    deadline = time.monotonic() + 60
    while "failed-start" not in (page := client.get(f"{_p(project)}/").text) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "The last session started here failed: error: no live run" in page


def test_a_failed_start_shows_its_error_and_hint_not_only_its_last_line(project: Path, tmp_path: Path) -> None:
    """`strawpot start` ends with a hint line after its error: the page shows both, the error first."""
    script = tmp_path / "no_role.py"
    script.write_text("import sys\nprint('run x: starting', file=sys.stderr)\n"
                      "print('error: no role to start', file=sys.stderr)\n"
                      "print('hint: pass --role, or set [orchestrator].role in strawpot.toml', file=sys.stderr)\n"
                      "sys.exit(2)\n")
    client = _client(project, command=[sys.executable, str(script)])
    assert client.post(f"{_p(project)}/start", data={"csrf": csrf_token(SECRET), "task": "echo:x"},
                       headers={"origin": BASE}).status_code == 303
    deadline = time.monotonic() + 60
    while "failed-start" not in (page := client.get(f"{_p(project)}/").text) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ("The last session started here failed: error: no role to start (hint: pass --role, or set "
            "[orchestrator].role in strawpot.toml)") in page


def test_forms_post_with_their_origin_a_same_origin_referrer_policy(project: Path) -> None:
    # "no-referrer" would make Chromium send `Origin: null` on a form POST, which the Origin check refuses.
    assert _client(project).get(f"{_p(project)}/").headers["referrer-policy"] == "same-origin"


def test_strawpot_ui_outside_a_project_opens_on_the_projects_list(tmp_path: Path) -> None:
    import re

    proc = subprocess.Popen([*STRAWPOT, "ui", "--no-browser"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert re.fullmatch(r"StrawPot UI: http://127\.0\.0\.1:\d+/\?token=\S+\n", line), line
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_strawpot_ui_on_a_busy_port_or_an_unknown_host_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = strawpot("ui", "--no-browser", "--port", str(port), cwd=tmp_path, timeout=60)
    assert busy.returncode == 1
    assert busy.stderr == (f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
                           "hint: pick another --port (0 picks a free one), or stop what is using it\n")
    unknown = strawpot("ui", "--no-browser", "--allow-remote", "--host", "no-such-host.invalid", cwd=tmp_path,
                       timeout=60)
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: --host 'no-such-host.invalid': "), unknown.stderr


@pytest.mark.parametrize(("method", "path", "form"), [
    ("GET", "{p}/runs/run1%00x", {}),
    ("GET", "{p}/runs/run1%00x/events", {}),
    ("GET", "{p}/memory?q=a%00b", {}),
    ("POST", "{p}/runs/run1%00x/cancel", {}),
    ("POST", "{p}/runs/run1/cancel", {"agent": "impl-2\x00"}),
    ("POST", "{p}/start", {"task": "echo:x\x00y"}),
    ("POST", "{p}/runs/run1/resume", {"task": "go on", "agent\x00": "lead-1"}),
])
def test_a_nul_byte_in_a_run_id_or_a_form_field_is_a_one_line_400(project: Path, tmp_path: Path, method: str,
                                                                   path: str, form: dict[str, str]) -> None:
    client = _client(project, command=_recording_strawpot(tmp_path, 0))
    response = client.request(method, path.format(p=_p(project)), data={"csrf": csrf_token(SECRET), **form}
                              if method == "POST" else None, headers={"origin": BASE})
    assert response.status_code == 400, response.text
    assert "NUL" in response.text and "\n" not in response.text.strip()
    assert not (tmp_path / "argv.json").exists()  # nothing was run


def _recording_browser(tmp_path: Path) -> Path:
    """A `$BROWSER` that records what it was given and, for a file, its mode, its folder's mode and its text."""
    script = tmp_path / "browser.py"
    script.write_text(f"#!{sys.executable}\n"
                      "import json, os, pathlib, sys, urllib.parse\n"
                      "arg = sys.argv[1]\n"
                      "seen = {'argv': sys.argv[1:]}\n"
                      "if arg.startswith('file:'):\n"
                      "    page = pathlib.Path(urllib.parse.unquote(urllib.parse.urlparse(arg).path))\n"
                      "    seen |= {'mode': page.stat().st_mode & 0o777, 'folder_mode': page.parent.stat().st_mode"
                      " & 0o777, 'text': page.read_text(), 'page': str(page)}\n"
                      f"pathlib.Path({str(tmp_path / 'browser.tmp')!r}).write_text(json.dumps(seen))\n"
                      f"os.replace({str(tmp_path / 'browser.tmp')!r}, {str(tmp_path / 'browser.json')!r})\n")
    script.chmod(0o755)
    return script


def test_the_browser_is_given_a_private_redirect_file_not_the_secret(project: Path, tmp_path: Path) -> None:
    # Any local user reads a process's command line (/proc/PID/cmdline): the browser's must not hold the secret.
    import os
    import urllib.request

    env = {**os.environ, "STRAWPOT_DATA_DIR": str(tmp_path / "data"), "BROWSER": str(_recording_browser(tmp_path))}
    proc = subprocess.Popen([*STRAWPOT, "ui", "--project", str(project)],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        match = re.search(r"(http://127\.0\.0\.1:\d+\S*\?token=(\S+))", proc.stderr.readline())
        assert match, "no URL printed"
        url, token = match.groups()
        record = tmp_path / "browser.json"
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert record.exists(), "the UI never opened the browser"
        seen = json.loads(record.read_text())
        assert all(token not in arg for arg in seen["argv"]), seen["argv"]
        assert (seen["mode"], seen["folder_mode"]) == (0o600, 0o700)
        assert f'content="0;url={url}"' in seen["text"] and f'href="{url}"' in seen["text"]
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(url, timeout=60) as page:  # the URL it redirects to opens the UI
            assert "run1" in page.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert not Path(seen["page"]).parent.exists()  # removed when the UI stops


def test_the_schedules_page_flags_a_stored_bad_name_or_cron_per_schedule(project: Path) -> None:
    from datetime import UTC, datetime

    from orchestrator.schedules import Schedule, ScheduleStore

    store = ScheduleStore(project.parent / "data")
    store.add(Schedule(name="good", cron="0 9 * * *", project=project, role="r", task="t",
                       created=datetime(2026, 1, 1, tzinfo=UTC)))
    raw = json.loads((store.data_dir / "schedules.json").read_text())  # then edited by hand
    good = raw["schedules"][0]
    raw["schedules"] += [{**good, "name": "nightly\n"}, {**good, "name": "tick", "cron": "* * * * * *"}]
    (store.data_dir / "schedules.json").write_text(json.dumps(raw))
    page = _client(project).get("/schedules").text
    cells = re.findall(r"<tr><td>([^<]*)</td>.*?</tr>", page, re.S)
    assert cells == ["good", "nightly\\n", "tick"], cells
    assert "does not fire: invalid schedule name &#39;nightly\\n&#39;" in page
    assert "does not fire: invalid cron expression &#39;* * * * * *&#39;: use five fields" in page
    assert page.count("does not fire") == 2
