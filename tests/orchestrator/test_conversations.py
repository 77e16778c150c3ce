"""Conversations over real headless sessions of the stub agent: one task at a time, FIFO, each seeing the earlier."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path

import pytest

from orchestrator.conversation_runner import CONTEXT_HEADING, CONTEXT_LIMIT, ConversationRunner, prompt
from orchestrator.conversations import (
    ENDED,
    MAX_TASK_CHARS,
    ConversationError,
    ConversationStore,
    NoSuchConversation,
    TaskTooLong,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConversationStore:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(config))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(tmp_path / "data"))
    return ConversationStore(tmp_path / "data")


def _ended(store: ConversationStore, conversation_id: int, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(t.phase == ENDED for t in store.tasks(conversation_id)) < n:
        assert time.monotonic() < deadline, f"timed out: {store.tasks(conversation_id)}"
        time.sleep(0.1)


def test_two_tasks_run_one_after_the_other_and_the_second_sees_the_first_s_answer(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    conversation = store.create(project.root, source="chat")
    runner = ConversationRunner(store)
    go = project.root.parent / "go"  # the first task's agent waits for it: still running when the second comes
    said = f"wait-for:{go} then echo:the answer is 42"
    first = runner.submit(conversation.id, said)
    second = runner.submit(conversation.id, "echo:second then context")
    assert first.run_id and not first.queued
    assert second.queued and second.ahead == 1, "a task waits while the one before it runs"
    go.touch()
    _ended(store, conversation.id, 2)
    done = store.tasks(conversation.id)
    assert [(t.state, t.exit_code) for t in done] == [("succeeded", 0), ("succeeded", 0)]
    assert done[0].summary == "the answer is 42"
    assert done[1].run_id and done[1].run_id != done[0].run_id
    assert done[1].started_at is not None and done[0].ended_at is not None
    assert done[1].started_at >= done[0].ended_at - 0.5, "the second began only after the first ended"
    assert done[1].summary.startswith("second\n") and "answer: the answer is 42" in done[1].summary
    assert f"task: {said}" in done[1].summary


def test_a_task_that_cannot_start_fails_with_its_reason_and_the_queue_goes_on(tmp_path, store) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "not-a-project"
    empty.mkdir()
    conversation = store.create(empty)
    runner = ConversationRunner(store)
    runner.submit(conversation.id, "echo:one")
    runner.submit(conversation.id, "echo:two")
    _ended(store, conversation.id, 2)
    for task in store.tasks(conversation.id):
        assert task.state == "failed" and task.error, task


def test_bad_requests_are_one_line_and_write_nothing(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NoSuchConversation) as missing:
        store.submit(999, "echo:x")
    assert missing.value.exit_code == 2
    conversation = store.create(tmp_path)
    with pytest.raises(TaskTooLong):
        store.submit(conversation.id, "x" * (MAX_TASK_CHARS + 1))
    with pytest.raises(ConversationError):
        store.submit(conversation.id, "   ")
    assert store.tasks(conversation.id) == []
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_only_one_of_two_processes_claims_a_conversation_s_next_task(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    conversation = store.create(tmp_path)
    for n in range(3):
        store.submit(conversation.id, f"echo:{n}")
    other = ConversationStore(store.path.parent)
    got: list[object] = []
    threads = [threading.Thread(target=lambda s=s, i=i: got.append(s.claim(conversation.id, f"run_{i}")))
               for i, s in enumerate([store, other] * 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([g for g in got if g is not None]) == 1


def test_a_notification_is_delivered_once_per_integration_and_acking_twice_is_fine(store) -> None:  # type: ignore[no-untyped-def]
    first = store.notify("telegram", "42", "nightly run succeeded")
    store.notify("slack", "C1", "other")
    assert [(n.id, n.chat_id, n.message) for n in store.pending("telegram")] == [(first, "42", "nightly run succeeded")]
    assert store.ack("telegram", first) and store.ack("telegram", first)
    assert store.pending("telegram") == [] and not store.ack("slack", first)


def test_a_corrupt_store_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "conversations.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(ConversationError) as broken:
        ConversationStore(tmp_path)
    assert "conversations.sqlite" in broken.value.message and broken.value.hint


def test_the_context_is_bounded_most_recent_first() -> None:
    from orchestrator.conversations import Task

    def done(n: int, summary: str) -> Task:
        return Task(n, 1, f"task {n}", ENDED, f"run_{n}", 0.0, 0.0, 0.0, "succeeded", 0, summary, "", None)

    earlier = [done(n, f"answer {n} " + "x" * 2000) for n in range(20, 0, -1)]
    text = prompt("echo:now", earlier)
    assert text.startswith("echo:now\n\n---\n" + CONTEXT_HEADING)
    assert text.index("task 20") < text.index("task 19")
    assert len(text) <= CONTEXT_LIMIT + 200 and "task 1\n" not in text
    assert prompt("echo:first", []) == "echo:first"
