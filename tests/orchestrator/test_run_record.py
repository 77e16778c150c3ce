"""`RunRecord`, the one reader and writer of a run's session.json: its shape on disk, and hostile files."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from orchestrator.orphans import owner_alive
from orchestrator.run_record import (
    MAX_RECORD_BYTES,
    AgentRecord,
    RunNotFound,
    RunRecord,
    RunRecordBroken,
    State,
    find_run,
    list_runs,
    read_run,
)
from orchestrator.session import Session

# The keys docs/sessions.md documents, in the order session.json has always written them.
RUN_KEYS = ["format", "run_id", "role", "task", "state", "exit_code", "started_at", "ended_at", "denden_addr", "tmux",
            "owner_pid", "isolation", "merge_result", "summary", "inputs", "sandbox", "agents", "runner"]
AGENT_KEYS = ["agent_id", "role", "agent", "parent", "depth", "task", "workspace", "state", "pid", "exit_code",
              "started_at", "ended_at", "error", "session_id", "packages", "via_wildcard", "always_staged", "sandbox_denied"]


def _write(root: Path, run_id: str, data: object) -> Path:
    (root / run_id).mkdir(parents=True, exist_ok=True)
    path = root / run_id / "session.json"
    path.write_text(json.dumps(data))
    return path


def test_a_live_session_writes_the_documented_shape_and_reads_back_typed(tmp_path: Path) -> None:
    session = Session.create(tmp_path, "lead", "ship it", run_id="run_20260101_000000_abcdef")
    session.add_agent(AgentRecord("lead-1", "lead", "stub-agent", None, 0, "ship it", "/ws"))
    session.add_agent(AgentRecord("impl-1", "implementer", "stub-agent", "lead-1", 1, "part", "/ws2"))
    session.agent_started("lead-1", 4242)
    session.finish(State.SUCCEEDED, 0)
    on_disk = json.loads((tmp_path / session.run_id / "session.json").read_text())
    assert list(on_disk) == RUN_KEYS and list(on_disk["agents"][0]) == AGENT_KEYS
    record = read_run(tmp_path, session.run_id)
    assert record.to_dict() == on_disk  # read then written again: the same record, byte for byte in JSON
    assert (record.state, record.exit_code, record.role) == (State.SUCCEEDED, 0, "lead")
    assert record.root is not None and record.root.pid == 4242
    assert [(depth, a.agent_id) for depth, a in record.tree()] == [(0, "lead-1"), (1, "impl-1")]
    assert oct(os.stat(tmp_path / session.run_id / "session.json").st_mode & 0o777) == "0o600"


def test_an_older_record_missing_optional_fields_reads_with_defaults(tmp_path: Path) -> None:
    _write(tmp_path, "run1", {"run_id": "run1", "role": "lead", "state": "running", "started_at": 5,
                              "agents": [{"agent_id": "a", "state": "paused"}]})
    record = read_run(tmp_path, "run1")
    assert (record.task, record.owner_pid, record.isolation, record.sandbox) == ("", None, {}, {})
    [agent] = record.agents
    assert (agent.state, agent.parent, agent.depth, agent.packages) == (State.PAUSED, None, 0, [])


@pytest.mark.parametrize(("data", "reason"), [
    ("{not json", "Expecting property name"),
    ([1, 2], "it is not a JSON object"),
    ({"state": "exploded"}, "the run: state 'exploded' is not one of staged, running"),
    ({"state": "running", "agents": {"a": 1}}, "agents is not a list"),
    ({"state": "running", "agents": [{"role": "r"}]}, "agent #1 has no agent_id"),
    ({"state": "running", "agents": [{"agent_id": "a", "pid": "1; rm -rf /"}]}, "agent a: pid is not a whole number"),
    ({"state": "running", "exit_code": True}, "the run: exit_code is not a whole number"),
    ({"state": "running", "isolation": "worktree"}, "the run: isolation is not an object"),
    ({"state": "running", "agents": [{"agent_id": "a", "packages": [1]}]}, "packages is not a list of strings"),
    ("[" * 100_000, "nests too deep"),
])
def test_a_broken_record_is_one_error_naming_the_file_and_what_is_wrong(tmp_path: Path, data: object,
                                                                         reason: str) -> None:
    path = tmp_path / "run1" / "session.json"
    path.parent.mkdir()
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(RunRecordBroken) as caught:
        read_run(tmp_path, "run1")
    assert reason in caught.value.reason and str(path) in str(caught.value)
    assert caught.value.exit_code == 2
    assert list_runs(tmp_path) == []  # the list skips it; `sessions show` names it


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"run_id": "run1", "role": "lead", "state": "running", "started_at": 1}))
    sessions = tmp_path / "sessions"
    (sessions / "run1").mkdir(parents=True)
    (sessions / "run1" / "session.json").symlink_to(elsewhere)
    with pytest.raises(RunRecordBroken, match="a symbolic link, not followed"):
        read_run(sessions, "run1")


def test_a_fifo_or_a_huge_file_does_not_hang_or_fill_memory(tmp_path: Path) -> None:
    (tmp_path / "run1").mkdir()
    os.mkfifo(tmp_path / "run1" / "session.json")
    done: list[BaseException] = []
    reader = threading.Thread(target=lambda: done.append(pytest.raises(RunRecordBroken, read_run, tmp_path, "run1")
                                                         .value))
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and "not a regular file" in str(done[0])
    (tmp_path / "run2").mkdir()
    with open(tmp_path / "run2" / "session.json", "wb") as f:
        f.truncate(MAX_RECORD_BYTES + 10)  # sparse: no disk used
    with pytest.raises(RunRecordBroken, match="over 16 MiB"):
        read_run(tmp_path, "run2")


def test_no_run_and_an_id_that_names_another_folder(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no run 'run_nope'"):
        read_run(tmp_path, "run_nope")
    _write(tmp_path, "inside", {"state": "running"})
    assert find_run(tmp_path / "x", "../inside") is None and find_run(tmp_path, ".hidden") is None


def test_a_planted_owner_pid_of_0_or_below_is_no_live_owner() -> None:
    # os.kill(0, 0) or os.kill(-1, 0) "succeeds" (it signals a process group): never a sign the owner lives
    for pid in (0, -1):
        assert not owner_alive(RunRecord("r", "lead", "t", State.RUNNING, time.time(), owner_pid=pid))
    assert owner_alive(RunRecord("r", "lead", "t", State.RUNNING, time.time(), owner_pid=os.getpid()))


def test_an_agent_loop_in_the_record_still_lists_every_agent_once(tmp_path: Path) -> None:
    _write(tmp_path, "run1", {"state": "running", "agents": [{"agent_id": "a", "parent": "b"},
                                                             {"agent_id": "b", "parent": "a"},
                                                             {"agent_id": "c"}]})
    assert sorted(a.agent_id for _, a in read_run(tmp_path, "run1").tree()) == ["a", "b", "c"]


def test_a_summary_is_bounded_and_a_cut_one_says_so() -> None:
    from orchestrator.run_record import SUMMARY_LIMIT, bounded_summary

    assert bounded_summary("  the answer\n") == "the answer"
    long = bounded_summary("x" * (SUMMARY_LIMIT * 3))
    assert len(long) <= SUMMARY_LIMIT and long.endswith(f"(cut: {SUMMARY_LIMIT * 3:,} characters in all)")


def test_a_planted_trace_link_is_refused_not_followed(tmp_path: Path) -> None:
    """trace.jsonl lives where an agent or a cloned repository can write: a link to a secret file is not read."""
    from orchestrator.session import TRACE_FILE, read_trace

    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"event": "the user\'s secret"}\n')
    run = tmp_path / "sessions" / "run_20260101_000000_aaaaaa"
    run.mkdir(parents=True)
    assert read_trace(run.parent, run.name) == []
    (run / TRACE_FILE).symlink_to(secret)
    with pytest.raises(OSError):
        read_trace(run.parent, run.name)
    (run / TRACE_FILE).unlink()
    (run / TRACE_FILE).write_text('{"event": "run_started"}\n')
    assert read_trace(run.parent, run.name) == [{"event": "run_started"}]
