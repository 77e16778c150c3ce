"""The chat adapters' API of a real `strawpot ui`: the fixture adapter holds a conversation through it (WebSocket
and polling), and what is not an integration's request, or is too big, is refused with nothing run."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from dashboard.api_conversations import STATUS, status_of
from dashboard.app import create_app, home_path
from dashboard.security import cookie_name
from orchestrator.conversations import ConversationStore
from orchestrator.integration_keys import api_url, key_for
from orchestrator.run_record import State
from strawpot.model.kinds import Kind
from strawpot.model.package_folder import load_package
from tests._cli import STRAWPOT
from tests.orchestrator.conftest import ProjectFixture
from tests.ui._live import wait_for
from tests.ui.test_ui_steer import project  # noqa: F401

ADAPTER = Path(__file__).resolve().parents[2] / "fixtures" / "integrations" / "fixture-chat" / "adapter.py"
NAME = "fixture-chat"
pytestmark = pytest.mark.e2e


@dataclass
class Ui:
    origin: str  # http://127.0.0.1:PORT
    secret: str
    data: Path

    def api(self, name: str = NAME) -> str:
        return api_url(self.origin, key_for(self.data, name))


@contextlib.contextmanager
def strawpot_ui(cwd: Path, log: Path) -> Iterator[Ui]:
    """A real `strawpot ui` in `cwd` on a free port, its stderr in `log`."""
    with open(log, "w", encoding="utf-8") as err:
        ui = subprocess.Popen([*STRAWPOT, "ui", "--no-browser"], cwd=cwd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=err, env=dict(os.environ))
    try:
        wait_for(lambda: "?token=" in log.read_text(), "the UI's URL")
        found = re.search(r"(http://127\.0\.0\.1:\d+)\S*\?token=(\S+)", log.read_text())
        assert found, log.read_text()
        yield Ui(found[1], found[2], Path(os.environ["STRAWPOT_DATA_DIR"]))
    finally:
        ui.terminate()
        ui.wait(timeout=30)


@contextlib.contextmanager
def adapter(api: str, folder: Path, **env: str) -> Iterator[Path]:
    """The fixture adapter on `api`, its data (inbox, outbox) in `folder`."""
    folder.mkdir()
    process = subprocess.Popen([sys.executable, str(ADAPTER)], cwd=folder, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=open(folder / "adapter.log", "w"),  # noqa: SIM115
                               env={**os.environ, "STRAWPOT_API_URL": api, "STRAWPOT_BOT_TOKEN": "t",
                                    "STRAWPOT_DATA_DIR": str(folder), **env})
    try:
        yield folder
        assert process.poll() is None, (folder / "adapter.log").read_text()
    finally:
        process.terminate()
        process.wait(timeout=30)


def wrong_key(api: str) -> str:
    """The key of `api` with its first character changed: well formed, and no integration's."""
    key = api.rsplit("/", 1)[1]
    return ("A" if key[0] != "A" else "B") + key[1:]


def send(folder: Path, n: int, chat_id: str, text: str) -> None:
    (folder / "inbox").mkdir(exist_ok=True)
    draft = folder / f"{n:04}.draft"
    draft.write_text(json.dumps({"chat_id": chat_id, "text": text}), encoding="utf-8")
    draft.rename(folder / "inbox" / f"{n:04}.json")


def outbox(folder: Path) -> list[dict[str, Any]]:
    """The adapter's sent messages: whole lines only (it may be appending one as this reads)."""
    path = folder / "outbox.jsonl"
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text[:text.rfind("\n") + 1].splitlines()]


def replies(folder: Path, n: int, kind: str = "reply") -> list[dict[str, Any]]:
    wait_for(lambda: len([m for m in outbox(folder) if m["kind"] in (kind, "error")]) >= n,
             f"{n} {kind}(s) in the outbox", timeout=90)
    found = [m for m in outbox(folder) if m["kind"] in (kind, "error")]
    assert all(m["kind"] == kind for m in found), found
    return found


@pytest.mark.parametrize("path", ["websocket", "polling"])
def test_the_fixture_adapter_holds_a_two_task_conversation(project: ProjectFixture, tmp_path: Path,  # noqa: F811
                                                           path: str) -> None:
    project.build()
    with strawpot_ui(project.root, tmp_path / "ui.log") as ui, \
            adapter(ui.api(), tmp_path / "chat", **({"FIXTURE_CHAT_POLL": "1"} if path == "polling" else {})) as chat:
        send(chat, 1, "c1", "echo:the answer is 42")
        [first] = replies(chat, 1)
        send(chat, 2, "c1", "echo:second then context")
        first, second = replies(chat, 2)
        store = ConversationStore(ui.data)
        note = store.notify(NAME, "c1", "the nightly run succeeded")
        [delivered] = replies(chat, 1, "notification")
        wait_for(lambda: store.pending(NAME) == [], "the notification's ack")

    assert (first["status"], first["text"], first["via"]) == ("completed", "the answer is 42", path)
    assert (second["status"], second["via"]) == ("completed", path)
    assert second["text"].startswith("second\n") and "answer: the answer is 42" in second["text"], second
    assert "task: echo:the answer is 42" in second["text"]
    if path == "websocket":
        assert first["events"] > 0 and second["events"] > 0, "the socket carried the runs' trace events"
    [conversation] = store.recent()
    assert conversation.project == project.root.resolve() and conversation.source == NAME
    tasks = store.tasks(conversation.id)
    assert [t.run_id for t in tasks] == [first["run_id"], second["run_id"]]
    assert (delivered["chat_id"], delivered["text"], delivered["id"]) == ("c1", "the nightly run succeeded", note)


def test_bad_requests_are_refused_and_run_nothing(project: ProjectFixture, tmp_path: Path) -> None:  # noqa: F811
    project.build()
    with strawpot_ui(project.root, tmp_path / "ui.log") as ui, httpx.Client(timeout=30) as http:
        api = ui.api()
        made = http.post(f"{api}/api/imu/conversations", json={})
        assert made.status_code == 200 and set(made.json()) == {"id", "project_id"}, made.text
        cid = made.json()["id"]

        missing = http.post(f"{api}/api/conversations/999/tasks", json={"task": "echo:x"})
        assert missing.status_code == 404 and missing.json() == {"error": "no conversation 999"}
        assert http.post(f"{api}/api/conversations", json={"project_id": 999}).status_code == 404
        assert http.get(f"{api}/api/sessions/run_nope").status_code == 404

        huge = json.dumps({"task": "x" * 1_000_000}).encode()
        too_big = http.post(f"{api}/api/conversations/{cid}/tasks", content=huge,
                            headers={"content-type": "application/json"})
        assert too_big.status_code == 413 and "over" in too_big.json()["error"]
        chunked = http.post(f"{api}/api/conversations/{cid}/tasks", content=iter([huge[:500_000], huge[500_000:]]))
        assert chunked.status_code == 413 and "over" in chunked.json()["error"], "no Content-Length: cut at the limit"
        assert _answer_to_a_promise_of(1_000_000, f"{api}/api/conversations/{cid}/tasks").startswith(
            "HTTP/1.1 413 "), "refused on its Content-Length, before a byte of the body came"
        assert http.post(f"{api}/api/conversations/{cid}/tasks", content=b"[1,").status_code == 400

        wrong = f"{ui.origin}/i/{wrong_key(api)}"
        refused = http.post(f"{wrong}/api/conversations/{cid}/tasks", json={"task": "echo:x"})
        assert refused.status_code == 404 and "no integration" in refused.json()["error"]
        assert http.post(f"{ui.origin}/i/short/api/imu/conversations", json={}).status_code == 404
        other = http.get(f"{api}/api/integrations/telegram")
        assert other.status_code == 404, "an integration sees its own record only"
        assert http.get(f"{api}/api/integrations/{NAME}").json()["name"] == NAME
        assert http.get(f"{api}/api/conversations/{cid}").json() == {"id": cid, "project_id": made.json()["project_id"],
                                                                    "sessions": []}

        store = ConversationStore(ui.data)
        note = store.notify(NAME, "42", "done")
        assert http.get(f"{api}/api/integrations/{NAME}/notifications").json() == [
            {"id": note, "chat_id": "42", "message": "done"}]
        for _ in range(2):
            acked = http.post(f"{api}/api/integrations/{NAME}/notifications/{note}/ack")
            assert acked.status_code == 200, acked.text
        assert http.get(f"{api}/api/integrations/{NAME}/notifications").json() == []
        assert http.post(f"{ui.api('telegram')}/api/integrations/{NAME}/notifications/{note}/ack").status_code == 404
    assert not list(project.sessions_dir.glob("*/session.json")), "no request above started a run"


def _answer_to_a_promise_of(size: int, url: str) -> str:
    """The status line a server answers to headers promising a `size`-byte body that never comes."""
    parts = httpx.URL(url)
    with socket.create_connection((parts.host, parts.port), timeout=10) as sock:
        sock.sendall(f"POST {parts.raw_path.decode()} HTTP/1.1\r\nHost: {parts.host}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode())
        return sock.recv(4096).decode("latin-1").split("\r\n")[0]


def test_the_key_opens_no_page_and_skips_no_csrf_check(project: ProjectFixture, tmp_path: Path) -> None:  # noqa: F811
    project.build()
    with strawpot_ui(project.root, tmp_path / "ui.log") as ui, httpx.Client(timeout=30) as http:
        api, start = ui.api(), home_path(project.root) + "start"
        port = int(ui.origin.rsplit(":", 1)[1])
        browser = {"cookie": f"{cookie_name(port)}={ui.secret}", "origin": ui.origin}
        through_api = http.post(f"{api}{start}", data={"task": "echo:x"}, headers=browser)
        assert through_api.status_code == 404, "the API serves no page"
        key = api.rsplit("/", 1)[1]
        no_csrf = http.post(f"{ui.origin}{start}?key={key}", data={"task": "echo:x", "key": key},
                            headers={**browser, "x-integration-key": key})
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
        assert http.get(f"{ui.origin}/", headers={"x-integration-key": key}).status_code == 403
        assert http.get(f"{api}/api/integrations/{NAME}").status_code == 200, "while the API needs no cookie"
    assert not list(project.sessions_dir.glob("*/session.json"))


def _fixture_module() -> Any:
    """adapter.py as a module, for its WebSocket client."""
    spec = importlib.util.spec_from_file_location("fixture_chat_adapter", ADAPTER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stream(url: str, offset: int) -> list[dict[str, Any]]:
    """Every message of the session WebSocket at `url`, opened with `trace_offset` = `offset`, until it closes."""
    ws = _fixture_module().WebSocket(url)
    try:
        ws.send_json({"type": "init", "trace_offset": offset})
        messages = []
        while (message := ws.receive_json()) is not None:
            messages.append(message)
        return messages
    finally:
        ws.close()


def test_a_second_task_waits_its_turn_and_says_so(project: ProjectFixture, tmp_path: Path) -> None:  # noqa: F811
    project.build()
    with strawpot_ui(project.root, tmp_path / "ui.log") as ui, httpx.Client(timeout=30) as http:
        api = ui.api()
        cid = http.post(f"{api}/api/imu/conversations").json()["id"]
        go = tmp_path / "go"  # the first task's agent waits for it: still running while the test looks
        said = f"wait-for:{go} then echo:one"
        try:
            first = http.post(f"{api}/api/conversations/{cid}/tasks", json={"task": said}).json()
            second = http.post(f"{api}/api/conversations/{cid}/tasks", json={"task": "echo:two"}).json()
            assert set(first) == {"run_id", "task_id"} and first["run_id"].startswith("run_"), first
            assert second["queued"] is True and second["ahead"] == 1 and "run_id" not in second, second
            waiting = http.get(f"{api}/api/conversations/{cid}").json()["sessions"]
            assert [(s["run_id"], s["status"], s["task"]) for s in waiting] == [
                (first["run_id"], "running", said), (None, "queued", "echo:two")]
        finally:
            go.touch()  # a failed check leaves no agent waiting for it

        live = _stream(f"{api.replace('http://', 'ws://')}/ws/sessions/{first['run_id']}", 0)
        *events, end = live
        assert end == {"type": "stream_complete", "status": "completed", "summary": "one", "exit_code": 0}
        assert events and [e["offset"] for e in events] == list(range(len(events)))
        assert all(e["type"] == "trace" and isinstance(e["event"], dict) for e in events)
        again = _stream(f"{api.replace('http://', 'ws://')}/ws/sessions/{first['run_id']}", len(events) - 1)
        assert again == [events[-1], end], "trace_offset skips the events the client has"

        wait_for(lambda: all(s["status"] == "completed"
                             for s in http.get(f"{api}/api/conversations/{cid}").json()["sessions"]), "both tasks")
        sessions = http.get(f"{api}/api/conversations/{cid}").json()["sessions"]
        assert sessions[1]["summary"] == "two" and sessions[1]["run_id"] not in (None, first["run_id"])
        assert http.get(f"{api}/api/sessions/{sessions[1]['run_id']}").json() == {
            "run_id": sessions[1]["run_id"], "status": "completed", "summary": "two", "exit_code": 0}


def test_the_fixture_is_an_integration_package_that_needs_its_token(tmp_path: Path) -> None:
    package = load_package(ADAPTER.parent, Kind.INTEGRATION)
    assert package.frontmatter["metadata"]["strawpot"]["entry_point"] == "python adapter.py"
    assert package.env["STRAWPOT_BOT_TOKEN"].required and (ADAPTER.parent / "requirements.txt").read_text() == ""
    env = {k: v for k, v in os.environ.items() if k != "STRAWPOT_BOT_TOKEN"}
    done = subprocess.run([sys.executable, str(ADAPTER)], cwd=tmp_path, env={**env, "STRAWPOT_DATA_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stderr) == (1, "fixture-chat: STRAWPOT_BOT_TOKEN is not set\n")


def test_a_websocket_with_a_wrong_key_never_opens(project: ProjectFixture, tmp_path: Path) -> None:  # noqa: F811
    fixture = _fixture_module()
    project.build()
    with strawpot_ui(project.root, tmp_path / "ui.log") as ui:
        ws_base = ui.api().replace("http://", "ws://")
        with pytest.raises(OSError, match="no WebSocket: HTTP/1.1 403"):
            fixture.WebSocket(f"{ui.origin.replace('http://', 'ws://')}/i/{wrong_key(ui.api())}/ws/sessions/run_x")
        good = fixture.WebSocket(ws_base + "/ws/sessions/run_x")
        good.send_json({"type": "init", "trace_offset": 0})
        assert good.receive_json() == {"type": "error", "message": "no session run_x of a conversation"}
        good.close()


def test_a_global_conversation_needs_a_home_project(tmp_path: Path) -> None:
    data = tmp_path / "data"
    client = TestClient(create_app(None, "s", data_dir=data))
    answer = client.post(f"/i/{key_for(data, NAME)}/api/imu/conversations", json={})
    assert answer.status_code == 409 and answer.json()["error"].startswith("no home project: set conversations.home")
    assert client.post(f"/i/{key_for(data, NAME)}/api/conversations", json={"project_id": "1"}).status_code == 400


def test_every_run_state_has_an_adapter_status() -> None:
    assert {status_of(s) for s in State if s != State.STAGED} == {"running", "completed", "failed", "stopped"}
    assert all(s in STATUS for s in State if s != State.STAGED)
    assert status_of("queued") == "queued"
