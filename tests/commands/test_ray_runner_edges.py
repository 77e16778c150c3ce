"""`start --runner ray` at its edges, on the real test cluster: a patch that no longer fits the user's tree, Ctrl-C
on the scheduler while remote runs are in flight, and `resume` of a remote run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from orchestrator.schedules import Schedule, ScheduleStore
from tests._cli import STRAWPOT, strawpot
from tests._ray_cluster import on_the_cluster, record, settled, start, started_remotely
from tests.orchestrator._agents import resumable_agent
from tests.orchestrator._merge_scenario import a_git_project, git
from tests.orchestrator.conftest import ProjectFixture

pytestmark = [pytest.mark.ray, pytest.mark.e2e]


def branches(root: Path) -> list[str]:
    return git(root, "branch", "--format=%(refname:short)").split()


def test_a_remote_patch_that_no_longer_fits_the_users_tree_is_kept_on_its_branch_and_the_tree_untouched(
        repo: ProjectFixture, env: dict[str, str]) -> None:
    """As a local worktree session whose merge-back conflicts: exit 3, one error line naming the path, the work on
    `strawpot/<run id>` with its worktree, nothing of the user's changed."""
    root = repo.root
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--task",
                             "sleep:4 then write:README.md=the agent's edit then write:other.txt=new"],
                            cwd=root, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started_remotely(proc)
    (root / "README.md").write_text("the user's edit during the run\n")  # while the session runs on its node
    git(root, "commit", "-qam", "the user's commit during the run")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 3, err
    data = record(repo)
    run_id, branch = data["run_id"], f"strawpot/{data['run_id']}"
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: the session's changes do not apply cleanly to your working tree: README.md changed in "
                      "your tree since the session started; nothing in it was changed"], err
    assert f"the changes are on branch {branch} (worktree " in err and "git apply --3way" in err
    assert f"run {run_id} failed (exit code 3)" in err and "succeeded" not in err and "Traceback" not in err
    assert (root / "README.md").read_text() == "the user's edit during the run\n"
    assert not (root / "other.txt").exists()
    assert git(root, "status", "--porcelain") == ""
    assert data["state"] == "failed" and data["isolation"]["state"] == "kept" and data["runner"]["node"]
    assert branch in branches(root)
    assert git(root, "show", f"{branch}:README.md") == "the agent's edit"
    assert git(root, "show", f"{branch}:other.txt") == "new"
    assert (Path(data["isolation"]["path"]) / "README.md").read_text() == "the agent's edit"
    assert f"{branch} (kept)" in strawpot("sessions", cwd=root, env=env).stdout
    pruned = strawpot("sessions", "--prune", "--force", cwd=root, env=env)
    assert pruned.returncode == 0 and run_id in pruned.stderr, pruned.stderr
    assert branches(root) == ["main"] and git(root, "worktree", "list").count("\n") == 1


def _in_flight(project: ProjectFixture, count: int, within: float = 90) -> list[dict[str, Any]]:
    """The records of `count` runs once each runs on a node (then time for their agents to start there)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = [json.loads(p.read_text()) for p in project.sessions_dir.glob("*/session.json")]
        if len(found) == count and all(d["denden_addr"] and d["runner"].get("node") for d in found):
            time.sleep(4)
            return found
        time.sleep(0.2)
    raise AssertionError(f"{count} remote sessions never started")


def test_ctrl_c_on_schedule_serve_leaves_its_two_remote_runs_to_end_and_both_are_recorded(
        repo: ProjectFixture, env: dict[str, str], tmp_path: Path) -> None:
    """`schedule serve` fired two remote runs; Ctrl-C on it stops serving, the runs go on to their end (sessions
    a scheduler started run on, docs/schedules.md), and the history records how each ended: none stays `running`."""
    data_dir = tmp_path / "data"
    env.update(STRAWPOT_DATA_DIR=str(data_dir), STRAWPOT_SCHEDULE_CATCH_UP="latest")
    now = datetime.now(UTC)
    due = now - timedelta(minutes=2)  # a daily time that passed a moment ago: fired once as serving begins
    store, names = ScheduleStore(data_dir), ["remote-a", "remote-b"]
    for name in names:
        store.add(Schedule(name=name, cron=f"{due.minute} {due.hour} * * *", project=repo.root, role="orchestrator",
                           task=f"sleep:8 then write:{name}.txt={name}", runner="ray",
                           created=now - timedelta(hours=1)))
    serving = subprocess.Popen([*STRAWPOT, "schedule", "serve"], cwd=tmp_path, env=env, text=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        _in_flight(repo, 2)
        os.killpg(serving.pid, signal.SIGINT)  # Ctrl-C on the terminal it runs on: its whole foreground group
        _, err = serving.communicate(timeout=60)
    finally:
        if serving.poll() is None:
            os.killpg(serving.pid, signal.SIGKILL)
            serving.communicate()
    assert serving.returncode == 0 and "Traceback" not in err, err
    assert err.splitlines()[-1] == f"stopped serving schedules; still running, and recorded by the next scheduler: " \
                                   f"{', '.join(names)}", err
    pids = [run.pid for name in names for run in store.history(name)]
    assert len(pids) == 2 and all(pids), pids
    deadline = time.monotonic() + 120
    while any(_alive(pid) for pid in pids if pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    for name in names:
        shown = strawpot("schedule", "history", name, "--json", cwd=tmp_path, env=env)
        assert shown.returncode == 0, shown.stderr
        [run] = json.loads(shown.stdout)["runs"]
        assert (run["outcome"], run["exit_code"]) == ("succeeded", 0), run
        assert (repo.root / f"{name}.txt").read_text() == name
    assert branches(repo.root) == ["main"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_on_schedule_run_stops_its_remote_run_and_the_history_says_interrupted(
        repo: ProjectFixture, env: dict[str, str], tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env["STRAWPOT_DATA_DIR"] = str(data_dir)
    ScheduleStore(data_dir).add(Schedule(name="slow", cron="0 9 * * *", project=repo.root, role="orchestrator",
                                         task="write:README.md=never merged then sleep:60", runner="ray"))
    proc = subprocess.Popen([*STRAWPOT, "schedule", "run", "slow"], cwd=tmp_path, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        settled(repo, within=90)
        began = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: `schedule run` and the `strawpot start` it waits for
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert time.monotonic() - began < 40  # well before the agent's 60 s
    [run] = ScheduleStore(data_dir).history("slow")
    assert (run.outcome, run.exit_code) == ("interrupted", 130)
    data = record(repo)
    assert data["state"] == "interrupted" and [a["state"] for a in data["agents"]] == ["cancelled"]
    assert (repo.root / "README.md").read_text() == "original\n"


def test_a_paused_remote_run_is_resumed_here_in_its_worktree_and_merged_back_as_start_would(
        project: ProjectFixture, env: dict[str, str], cluster: Any, tmp_path: Path) -> None:
    """The agents' workspaces came back into the run folder here and its worktree holds the session's work: resume
    goes on in them, on this machine, and merges back at the end; once merged, there is nothing to resume."""
    repo = on_the_cluster(project, env, cluster, resumable_agent(tmp_path))
    root = repo.root
    first = start(root, env, "session then write:a.txt=one then pause")
    assert first.returncode == 0, first.stderr
    mode, session_id = first.stdout.split()
    assert mode == "new"
    data = record(repo)
    run_id, node, host = data["run_id"], data["runner"]["node"], data["runner"]["host"]
    assert data["state"] == "paused" and data["isolation"]["state"] == "kept"
    [agent] = data["agents"]
    assert agent["state"] == "paused" and agent["session_id"] == session_id
    assert f"continue it with `strawpot resume {run_id}`" in first.stderr
    assert not (root / "a.txt").exists()

    # resumed here: `strawpot cancel` reaches its agent through this machine's Denden server, as a local run's
    resumed = subprocess.Popen([*STRAWPOT, "resume", run_id, "--headless", "--task", "session then sleep:60"],
                               cwd=root, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while record(repo)["agents"][0]["state"] != "running":
            assert time.monotonic() < deadline and resumed.poll() is None, "the resumed agent never ran"
            time.sleep(0.1)
        data = record(repo)
        assert data["runner"] == {"kind": "local", "resumed_from": {"kind": "ray", "address": cluster.address,
                                                                     "node": node, "host": host}}, data["runner"]
        cancelled = strawpot("cancel", run_id, cwd=root, env=env)
        assert cancelled.returncode == 0, cancelled.stderr
        _, err = resumed.communicate(timeout=60)
    finally:
        if resumed.poll() is None:
            resumed.kill()
            resumed.communicate()
    assert resumed.returncode == 130, err
    assert f"warning: run {run_id} ran on Ray node {node} ({host}) and goes on here, in its worktree and the " \
           "workspaces that came back; an agent CLI that keeps its conversation outside its workspace (in the home " \
           "folder) kept it on that node" in err.splitlines(), err
    data = record(repo)
    assert data["state"] == "cancelled" and data["isolation"]["state"] == "kept"  # as a local run's cancel ends

    again = strawpot("resume", run_id, "--headless", "--task", "session then read:a.txt then write:b.txt=two",
                     cwd=root, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"resumed {session_id}", "one"]  # its conversation, in its worktree
    assert "ran on Ray node" not in again.stderr  # it went on here last time: nothing was left on the worker
    assert (root / "a.txt").read_text() == "one" and (root / "b.txt").read_text() == "two"
    assert "applied the session's changes to your working tree (2 files)" in again.stderr
    data = record(repo)
    [after] = data["agents"]
    assert after["agent_id"] == agent["agent_id"] and after["workspace"] == agent["workspace"]
    assert after["state"] == "succeeded" and data["state"] == "succeeded"
    assert data["isolation"]["state"] == "merged"
    assert data["runner"]["resumed_from"]["node"] == node  # where the run began, through every resume
    assert branches(root) == ["main"] and git(root, "worktree", "list").count("\n") == 1

    gone = strawpot("resume", run_id, "--headless", "--task", "session", cwd=root, env=env)
    assert gone.returncode == 2, gone.stderr
    assert gone.stderr.splitlines()[0] == f"error: the worktree of run {run_id} is gone (merged); it cannot be " \
                                          "resumed", gone.stderr


def test_a_remote_run_that_brought_no_agent_back_cannot_be_resumed_and_says_so_in_one_line(
        project: ProjectFixture, env: dict[str, str]) -> None:
    """A run whose node was lost or whose worker refused it ended with nothing of its session here."""
    from orchestrator.remote_job import land
    from orchestrator.remote_session import Result
    from orchestrator.session import Session
    from orchestrator.worktree import WorktreeIsolator
    from strawpot.model.errors import IntegrityFailure

    project.build()
    a_git_project(project.root)
    session = Session.create(project.sessions_dir, "orchestrator", "t", "run_20260101_000000_abcdef")
    session.runner = {"kind": "ray", "address": "10.0.0.5:6379"}
    isolator = WorktreeIsolator()
    with pytest.raises(IntegrityFailure):
        land(session, isolator.create(session.run_id, project.root), isolator, project.root,
             Result("n1", "h1", None, refused="the installed packages it was sent do not match strawpot.lock: x"))
    refused = strawpot("resume", session.run_id, "--headless", "--task", "go on", cwd=project.root, env=env)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        f"error: run {session.run_id} ran on Ray node n1 (h1) and no agent of it came back: there is nothing to "
        "resume", f"hint: start a new run (`strawpot sessions show {session.run_id}` says how it ended)"]
