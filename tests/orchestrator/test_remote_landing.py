"""A remote run's folder landing in the local one: the local record and trace are never seen half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import remote_job
from orchestrator.remote_session import pack_run
from orchestrator.run_record import AgentRecord, RunRecord, read_run
from orchestrator.session import Session, State


def _remote_folder(root: Path) -> bytes:
    """What a worker sends back: the run folder of a finished run with one agent, its log and trace."""
    remote = Session.create(root, "lead", "fix it", run_id="run1")
    remote.add_agent(AgentRecord(agent_id="lead-1", role="lead", agent="stub", parent=None, depth=0, task="fix it",
                                 workspace=str(remote.agent_dir("lead-1")), state=State.RUNNING))
    remote.agent_dir("lead-1").mkdir(parents=True)
    (remote.agent_dir("lead-1") / "agent.log").write_text("done\n")
    remote.agent_ended("lead-1", State.SUCCEEDED, 0)
    remote.finish(State.SUCCEEDED, 0, "Fixed.")
    record, left_out = pack_run(remote.directory)
    assert not left_out
    return record


def test_the_local_record_stays_this_runs_while_the_remote_folder_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _remote_folder(tmp_path / "remote")
    local = Session.create(tmp_path / "local", "lead", "fix it", run_id="run1")
    local.event("remote_started", node="n1")
    seen: list[tuple[str, str]] = []
    read = remote_job.find_run

    def look_then_read(root: Path, run_id: str) -> RunRecord | None:  # the moment the remote folder has landed
        seen.append((json.loads((local.directory / "session.json").read_text())["state"],
                     (local.directory / "trace.jsonl").read_text()))
        return read(root, run_id)

    monkeypatch.setattr(remote_job, "find_run", look_then_read)
    events: list[str] = []
    remote = remote_job.fill_folder(local, record, lambda kind, _: events.append(kind))
    assert remote is not None and remote.state == State.SUCCEEDED and remote.summary == "Fixed."
    [(state, trace)] = seen
    assert state == "running", "the remote record was written over this run's before this run's was saved"
    assert "remote_started" in trace and "run_finished" not in trace, "the trace was replaced before it was read"
    assert (local.agent_dir("lead-1") / "agent.log").read_text() == "done\n"
    landed = [json.loads(line)["event"] for line in (local.directory / "trace.jsonl").read_text().splitlines()]
    assert "run_finished" not in landed and "agent_staged" in landed and events == landed[1:]
    after = read_run(local.directory.parent, "run1")
    assert after.state == State.RUNNING and [a.agent_id for a in after.agents] == ["lead-1"]
    assert after.agents[0].workspace == str(local.agent_dir("lead-1"))
