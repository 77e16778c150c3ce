"""The chat pages of `strawpot ui` over a real project and the stub agent: tasks run, queue, answer; bad requests."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dashboard.app import create_app, home_path
from dashboard.security import COOKIE, csrf_token
from orchestrator.conversations import ENDED, MAX_TASK_CHARS, ConversationStore
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills

pytestmark = pytest.mark.e2e
SECRET = "chat-pages-secret"
BASE = "http://testserver"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, Path, ConversationStore]:
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 60}).build()
    data = tmp_path / "data"
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(data))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    client = TestClient(create_app(root, SECRET, data_dir=data), base_url=BASE, follow_redirects=False)
    client.cookies.set(COOKIE, SECRET)
    return client, root, ConversationStore(data)


def _post(client: TestClient, url: str, **form: str) -> object:
    return client.post(url, data={"csrf": csrf_token(SECRET), **form}, headers={"origin": BASE})


def _ended(store: ConversationStore, conversation_id: int, n: int) -> None:
    deadline = time.monotonic() + 60
    while sum(t.phase == ENDED for t in store.tasks(conversation_id)) < n:
        assert time.monotonic() < deadline, store.tasks(conversation_id)
        time.sleep(0.1)


def test_tasks_run_one_at_a_time_the_queued_one_says_so_and_answers_are_shown_as_text(site) -> None:  # type: ignore[no-untyped-def]
    client, root, store = site
    chat = f"{home_path(root)}chat"
    go = root.parent / "go"  # the first task's agent waits for it: still running when the page is read
    try:
        opened = _post(client, chat, task=f"wait-for:{go} then echo:<b>bold</b> & done")
        assert opened.status_code == 303, opened.text
        [conversation] = store.recent(root)
        assert opened.headers["location"] == f"{chat}/{conversation.id}" and conversation.source == "ui"
        queued = _post(client, f"{chat}/{conversation.id}/tasks", task="echo:second then context")
        assert queued.status_code == 303, queued.text
        page = client.get(f"{chat}/{conversation.id}").text
        assert "queued behind 1" in page, "the second task waits for the first, and says so"
    finally:
        go.touch()  # a failed check leaves no agent waiting for it
    _ended(store, conversation.id, 2)
    first, second = store.tasks(conversation.id)
    page = client.get(f"{chat}/{conversation.id}").text
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; done" in page and "<b>bold</b>" not in page
    assert f'href="{home_path(root)}runs/{first.run_id}"' in page
    assert "answer: &lt;b&gt;bold&lt;/b&gt; &amp; done" in page, "the second task saw the first's answer"
    assert second.state == "succeeded" and second.started_at >= first.ended_at - 0.5  # type: ignore[operator]
    listed = client.get(chat).text
    assert f'href="{chat}/{conversation.id}"' in listed and "succeeded" in listed


def test_bad_requests_are_refused_with_one_line_and_start_nothing(site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client, root, store = site
    chat = f"{home_path(root)}chat"
    assert _post(client, f"{chat}/999/tasks", task="echo:x").status_code == 404
    elsewhere = store.create(tmp_path, source="chat")  # another project's conversation is not this project's
    assert client.get(f"{chat}/{elsewhere.id}").status_code == 404
    assert _post(client, f"{chat}/{elsewhere.id}/tasks", task="echo:x").status_code == 404
    mine = store.create(root)
    too_long = _post(client, f"{chat}/{mine.id}/tasks", task="x" * (MAX_TASK_CHARS + 1))
    assert too_long.status_code == 413 and "longer than" in too_long.text
    assert _post(client, f"{chat}/{mine.id}/tasks", task="   ").status_code == 400
    forged = client.post(f"{chat}/{mine.id}/tasks", data={"task": "echo:x"}, headers={"origin": BASE})
    assert forged.status_code == 403
    assert store.tasks(mine.id) == [] and store.tasks(elsewhere.id) == []
    assert not (root / ".strawpot" / "sessions").exists()
