"""ask_user on a terminal and headless, the project memory store, and the session record on disk."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from orchestrator.ask import Asker
from orchestrator.memory_sqlite import SqliteMemory
from orchestrator.run_record import find_run, list_runs
from orchestrator.session import AgentRecord, Session, State, read_trace


@pytest.mark.parametrize(
    ("typed", "choices", "default", "expected"),
    [
        ("2", ["red", "green"], "", "green"),  # a choice by number
        ("blue", ["red", "green"], "", "blue"),  # free text is allowed
        ("", ["red", "green"], "green", "green"),  # Enter takes the default
        ("", ["red", "green"], "", "red"),  # ... or the first choice
        ("  yes ", [], "", "yes"),
    ],
)
def test_terminal_answers(typed: str, choices: list[str], default: str, expected: str) -> None:
    shown: list[str] = []
    asker = Asker(lambda prompt: shown.append(prompt) or typed, write=shown.append)
    outcome = asker.ask("agent-1", "Colour?", choices, default, "for the logo", False)
    assert outcome.status == "ok" and outcome.value == expected
    text = "".join(shown)
    assert "[agent-1] asks: Colour?" in text and "why: for the logo" in text


def test_terminal_eof_falls_back_to_default() -> None:
    def closed(prompt: str) -> str:
        raise EOFError

    assert Asker(closed).ask("a", "Q?", [], "fallback", "", False).value == "fallback"


def test_json_answers_become_objects() -> None:
    asker = Asker(None)
    assert asker.ask("a", "Q?", [], '{"ok": true}', "", True).value == {"ok": True}
    assert asker.ask("a", "Q?", [], "plain", "", True).value == {"answer": "plain"}


def test_terminal_questions_are_asked_one_at_a_time() -> None:
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow(prompt: str) -> str:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        threading.Event().wait(0.05)
        with lock:
            active[0] -= 1
        return "x"

    asker = Asker(slow)
    threads = [threading.Thread(target=asker.ask, args=("a", "Q?", [], "", "", False)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1


def test_memory_recall_ranks_and_filters(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "memory")
    a = store.remember("deploys go through the staging cluster", ["deploy"], "project")
    store.remember("tests run with pytest", ["testing"], "project")
    c = store.remember("deploy on fridays is forbidden", ["deploy", "policy"], "team")
    assert [e.entry_id for e in store.recall("", ["deploy"], "", 10)] == [c, a]  # newest first on a tie
    assert [e.entry_id for e in store.recall("", ["deploy"], "project", 10)] == [a]
    assert [e.entry_id for e in store.recall("forbidden deploy", [], "", 10)][0] == c
    assert store.recall("kubernetes", [], "", 10) == []
    assert len(store.recall("", [], "", 2)) == 2
    assert [e.entry_id for e in store.recall('deploy" OR *', [], "", 10)] == [c, a]  # FTS syntax is only text


def test_session_files(tmp_path: Path) -> None:
    session = Session.create(tmp_path, "orchestrator", "ship it", run_id="run_test_1")
    record = AgentRecord("orchestrator-1", "orchestrator", "stub-agent", None, 0, "ship it", str(tmp_path / "ws"))
    session.add_agent(record)
    session.agent_started("orchestrator-1", 123)
    session.finish(State.SUCCEEDED, 0)
    found = find_run(tmp_path, "run_test_1")
    assert found is not None
    saved = found.to_dict()
    assert saved["state"] == "succeeded" and saved["exit_code"] == 0
    assert saved["agents"][0]["pid"] == 123 and saved["agents"][0]["state"] == "running"
    assert [e["event"] for e in read_trace(tmp_path, "run_test_1")] == ["run_started", "agent_staged", "run_finished"]
    assert [s.run_id for s in list_runs(tmp_path)] == ["run_test_1"]
    assert find_run(tmp_path, "../etc") is None and find_run(tmp_path, "nope") is None
    assert not list((tmp_path / "run_test_1").glob(".*.tmp"))  # no temp file left behind
    json.loads((tmp_path / "run_test_1" / "session.json").read_text())


def test_concurrent_trace_lines_never_interleave(tmp_path: Path) -> None:
    session = Session.create(tmp_path, "r", "t", run_id="run_test_2")
    payload = "x" * 5000
    threads = [threading.Thread(target=lambda i=i: [session.event("e", i=i, p=payload) for _ in range(20)])
               for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = read_trace(tmp_path, "run_test_2")
    assert len(events) == 101 and all(e["event"] in ("e", "run_started") for e in events)
