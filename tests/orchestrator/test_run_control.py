"""orchestrator.run_control, the functions `strawpot cancel/resume/sessions` and the UI share: real processes,
real run folders, each refusal a typed error with its exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator import questions
from orchestrator.run_control import (
    AnswerNotTaken,
    CancelRefused,
    CannotResume,
    RunNotRunning,
    answer,
    cancel_run,
    prune_runs,
    resume,
)
from orchestrator.run_record import RunNotFound, State, read_run
from strawpot.model.errors import LockOutdated
from strawpot.model.layout import Project

RUN = "run_20260101_000000_abcdef"


def _record(root: Path, **fields: object) -> Path:
    run_dir = root / ".strawpot" / "sessions" / RUN
    run_dir.mkdir(parents=True, exist_ok=True)
    data = {"run_id": RUN, "role": "lead", "task": "t", "state": "running", "started_at": time.time(), **fields}
    (run_dir / "session.json").write_text(json.dumps(data))
    return run_dir


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_cancel_refuses_an_ended_an_unknown_and_an_agentless_run_each_with_exit_2(tmp_path: Path) -> None:
    sessions = tmp_path / ".strawpot" / "sessions"
    with pytest.raises(RunNotFound):
        cancel_run(sessions, RUN)
    _record(tmp_path, state="succeeded")
    with pytest.raises(RunNotRunning, match="has ended \\(succeeded\\)") as ended:
        cancel_run(sessions, RUN)
    _record(tmp_path, agents=[])
    with pytest.raises(CancelRefused, match="has no agent yet") as agentless:
        cancel_run(sessions, RUN)
    assert ended.value.exit_code == agentless.value.exit_code == 2


def test_cancel_of_a_run_whose_strawpot_died_stops_the_agent_it_left(tmp_path: Path) -> None:
    agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                             env={**os.environ, "DENDEN_RUN_ID": RUN, "DENDEN_AGENT_ID": "lead-1"})
    try:
        run_dir = _record(tmp_path, owner_pid=_dead_pid(), denden_addr=f"unix:{tmp_path}/gone.sock",
                          agents=[{"agent_id": "lead-1", "role": "lead", "state": "running", "pid": agent.pid},
                                  {"agent_id": "impl-2", "role": "impl", "parent": "lead-1", "state": "succeeded"}])
        done = cancel_run(run_dir.parent, RUN, wait=5)
        assert agent.wait(timeout=10) == -9  # SIGKILL, to its whole group
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert (done.orphaned, done.stopped, done.run_state) == (True, ["lead-1"], "cancelled")
    record = read_run(run_dir.parent, RUN)
    assert [(a.agent_id, a.state) for a in record.agents] == [("lead-1", State.CANCELLED),
                                                              ("impl-2", State.SUCCEEDED)]
    assert oct(os.stat(run_dir / "session.json").st_mode & 0o777) == "0o600"


def test_answer_goes_through_and_each_refusal_has_its_reason_and_exit_code(tmp_path: Path) -> None:
    run_dir = _record(tmp_path)
    sessions = run_dir.parent
    ask_id = questions.post(run_dir, "lead-1", "Which branch?", ["main", "dev"], "main", "")
    assert answer(sessions, RUN, ask_id, "dev", "cli").answer == "dev"
    with pytest.raises(AnswerNotTaken) as again:
        answer(sessions, RUN, ask_id, "main", "ui")
    with pytest.raises(AnswerNotTaken) as unknown:
        answer(sessions, RUN, "9", "x", "cli")
    assert (again.value.reason, again.value.exit_code) == ("answered", 1)
    assert (unknown.value.reason, unknown.value.exit_code) == ("unknown", 2)
    assert unknown.value.hint == f"`strawpot sessions show {RUN}` lists its questions"
    with pytest.raises(RunNotFound):
        answer(sessions, "run_20260101_000000_000000", "1", "x", "cli")


def test_resume_checks_what_it_needs_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text("")
    lock = tmp_path / "strawpot.lock"
    lock.write_text("version = 1\n")
    project = Project(tmp_path)
    agent = {"agent_id": "lead-1", "role": "lead", "agent": "stub-agent", "state": "paused", "session_id": "s-1"}
    _record(tmp_path, owner_pid=os.getpid(), agents=[agent])
    with pytest.raises(CannotResume, match="is still running"):
        resume(project, RUN)
    _record(tmp_path, state="paused", agents=[{**agent, "session_id": ""}])
    with pytest.raises(CannotResume, match="does not declare metadata.strawpot.session.resume"):
        resume(project, RUN)
    with pytest.raises(CannotResume, match="has no agent 'nobody' \\(its agents: lead-1\\)"):
        resume(project, RUN, "nobody")
    _record(tmp_path, state="paused", agents=[agent], inputs={"lock_sha256": "0" * 64, "packages": {}})
    with pytest.raises(LockOutdated):
        resume(project, RUN)
    _record(tmp_path, state="paused", agents=[agent])
    target = resume(project, RUN)
    assert (target.agent.agent_id, target.record.run_id) == ("lead-1", RUN)


def test_prune_outside_a_repository_finds_nothing_and_asks_nobody(tmp_path: Path) -> None:
    _record(tmp_path, state="failed", isolation={"kind": "worktree", "state": "kept"})
    asked: list[object] = []
    pruned = prune_runs(tmp_path / ".strawpot" / "sessions", tmp_path, confirm=lambda found: asked.append(found)
                        or True)
    assert (pruned.removed, pruned.kept, pruned.refused, asked) == ([], [], [], [])
