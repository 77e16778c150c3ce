"""askUser through the run folder: the question as a file, its first answer, the wait and its fallbacks."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from orchestrator import questions
from orchestrator.ask import Asker


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A running run's folder (people may answer only while its run runs)."""
    folder = tmp_path / "run_1"
    folder.mkdir()
    (folder / "session.json").write_text(json.dumps({"run_id": "run_1", "state": "running"}))
    return folder


def _answer_when_asked(run_dir: Path, text: str) -> threading.Thread:
    """Answer question 1 as the UI would, as soon as it appears."""

    def answer() -> None:
        deadline = time.monotonic() + 10
        while questions.read(run_dir, "1") is None and time.monotonic() < deadline:
            time.sleep(0.01)
        questions.answer(run_dir, "1", text, "ui")

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def test_a_question_waits_in_the_run_folder_for_its_answer(run_dir: Path) -> None:
    thread = _answer_when_asked(run_dir, "green")
    outcome = Asker(None, run_wait=10, poll=0.01).ask("impl-1", "Colour?", ["red", "green"], "red", "logo", False,
                                                      run_dir=run_dir)
    thread.join()
    assert outcome.status == "ok" and outcome.value == "green"
    asked = json.loads((run_dir / "asks" / "1.json").read_text())
    assert {k: asked[k] for k in ("id", "agent_id", "question", "choices", "default", "why")} == {
        "id": "1", "agent_id": "impl-1", "question": "Colour?", "choices": ["red", "green"], "default": "red",
        "why": "logo"}
    [question] = questions.questions(run_dir)
    assert question.answer == "green" and question.answered_by == "ui" and not question.is_open
    assert (run_dir / "asks").stat().st_mode & 0o777 == 0o700
    assert not list((run_dir / "asks").glob(".*.tmp"))


def test_without_an_answer_in_time_the_default_rule_answers_and_is_recorded(run_dir: Path) -> None:
    asker = Asker(None, run_wait=0.2, poll=0.01)
    started = time.monotonic()
    assert asker.ask("a-1", "Colour?", ["red", "green"], "", "", False, run_dir=run_dir).value == "red"
    assert time.monotonic() - started < 45  # not the default wait of minutes (a loaded machine stalls seconds)
    first = questions.read(run_dir, "1")
    assert first is not None and first.answered_by == "timeout" and first.answer == "red"
    nothing = asker.ask("a-1", "Anything?", [], "", "", False, run_dir=run_dir)
    assert nothing.status == "error" and nothing.code == "ERR_NO_USER"
    second = questions.read(run_dir, "2")
    assert second is not None and second.answered_by == "timeout" and second.answer is None
    with pytest.raises(questions.AnswerRefused, match="answered already, by timeout"):
        questions.answer(run_dir, "1", "late", "ui")


def test_a_question_stops_waiting_when_its_agent_ends(run_dir: Path) -> None:
    started = time.monotonic()
    outcome = Asker(None, run_wait=60, poll=0.01).ask("a-1", "Q?", [], "fine", "", False, run_dir=run_dir,
                                                      stop=lambda: time.monotonic() - started > 0.1)
    assert outcome.value == "fine" and time.monotonic() - started < 45  # not its run_wait of 60 s
    ended = questions.read(run_dir, "1")
    assert ended is not None and ended.answered_by == "ended"


def test_headless_without_run_wait_answers_at_once_and_writes_nothing(run_dir: Path) -> None:
    assert Asker(None).ask("a", "Q?", ["x"], "", "", False, run_dir=run_dir).value == "x"
    assert not (run_dir / "asks").exists()


@pytest.mark.parametrize(("ask_id", "text", "message"), [
    ("../1", "x", "no question '../1'"),
    ("1.answer", "x", "no question"),
    ("7", "x", "no question '7'"),
    ("1", "   ", "the answer is empty"),
    ("1", "x" * (questions.MAX_ANSWER_BYTES + 1), "over 64 KiB"),
])
def test_refused_answers(run_dir: Path, ask_id: str, text: str, message: str) -> None:
    questions.post(run_dir, "a-1", "Q?", [], "", "")
    with pytest.raises(questions.AnswerRefused, match=message):
        questions.answer(run_dir, ask_id, text, "ui")
    assert questions.read(run_dir, "1") is not None and questions.questions(run_dir)[0].is_open


def test_only_the_first_of_two_answers_is_taken(run_dir: Path) -> None:
    questions.post(run_dir, "a-1", "Q?", [], "", "")
    assert questions.answer(run_dir, "1", "first", "ui").answer == "first"
    with pytest.raises(questions.AnswerRefused, match="answered already, by ui \\('first'\\)"):
        questions.answer(run_dir, "1", "second", "cli")
    assert questions.post(run_dir, "a-2", "Again?", [], "", "") == "2"


def test_people_answer_only_while_the_run_runs(run_dir: Path) -> None:
    questions.post(run_dir, "a-1", "Q?", [], "", "")
    (run_dir / "session.json").write_text(json.dumps({"run_id": "run_1", "state": "interrupted"}))
    with pytest.raises(questions.AnswerRefused, match="run run_1 is interrupted: no agent waits") as refused:
        questions.answer(run_dir, "1", "yes", "cli")
    assert refused.value.reason == "ended"
    assert questions.settle(run_dir, "1", None, "ended").answered_by == "ended"


def test_planted_question_files_neither_block_nor_answer_later_questions(run_dir: Path) -> None:
    asks = run_dir / "asks"
    asks.mkdir(mode=0o700)
    (asks / "999999999.json").write_text(json.dumps({"id": "999999999", "agent_id": "x", "question": "forged"}))
    (asks / "2.answer.json").write_text(json.dumps({"answer": "forged answer", "by": "ui"}))  # for a question to come
    ids = [questions.post(run_dir, "a-1", f"question {n}?", [], "", "") for n in range(3)]
    assert len(set(ids)) == 3 and [int(i) for i in ids] == sorted(int(i) for i in ids)  # numbered in the order asked
    for ask_id in ids:
        found = questions.read(run_dir, ask_id)
        assert found is not None and found.is_open and found.agent_id == "a-1"
    questions.answer(run_dir, ids[0], "a real answer", "cli")
    assert questions.read(run_dir, ids[0]).answer == "a real answer"  # type: ignore[union-attr]

    def answer_the_next_one() -> None:  # as the UI would: the open question of agent a-2
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            waiting = [q for q in questions.questions(run_dir) if q.agent_id == "a-2" and q.is_open]
            if waiting:
                questions.answer(run_dir, waiting[0].ask_id, "green", "ui")
                return
            time.sleep(0.01)

    thread = threading.Thread(target=answer_the_next_one)
    thread.start()
    outcome = Asker(None, run_wait=10, poll=0.01).ask("a-2", "Colour?", ["red", "green"], "red", "", False,
                                                      run_dir=run_dir)
    thread.join()
    assert outcome.value == "green"


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_question_or_answer_planted_as_a_fifo_or_an_endless_link_is_passed_over(run_dir: Path,
                                                                                   planted: str) -> None:
    """The run folder is the agent's to write: a FIFO or a link to /dev/zero where the UI reads a question or its
    answer is no question (and no answer), never a read that blocks or does not end."""
    asks = run_dir / "asks"
    asks.mkdir(mode=0o700)
    for name in ("1.json", "2.answer.json"):
        if planted == "fifo":
            os.mkfifo(asks / name)
        else:
            (asks / name).symlink_to("/dev/zero")
    (asks / "2.json").write_text(json.dumps({"id": "2", "agent_id": "a", "question": "real?"}))
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(
        (questions.read(run_dir, "1"), questions.read(run_dir, "2"), len(questions.questions(run_dir)))), daemon=True)
    reader.start()
    reader.join(10)
    assert found, "a planted file was waited on or read without end"
    first, second, listed = found[0]  # type: ignore[misc]
    assert first is None and second is not None and second.is_open and listed == 1
