"""`start --runner ray` on a real multi-node Ray cluster on this machine (`ray.cluster_utils.Cluster`): the session runs
on a worker node, its patch merges back here, its run folder reads as a local run's; refusals are one line."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.remote_session import Job, RemoteSession, pack_tree
from tests._cli import STRAWPOT, strawpot
from tests._ray_cluster import MB, NODES, record, settled, start, started_remotely
from tests.orchestrator._merge_scenario import IDENTITY, a_git_project, git
from tests.orchestrator.conftest import ProjectFixture

pytestmark = [pytest.mark.ray, pytest.mark.e2e]


def test_a_remote_session_runs_on_a_worker_merges_back_and_reads_as_a_local_run(
        repo: ProjectFixture, env: dict[str, str], cluster: Any) -> None:
    root = repo.root
    (root / "notes.txt").write_text("notes\nmy own uncommitted line\n")  # carried to the worker as the base
    env["STRAWPOT_RUNNER_RAY_RESOURCES"] = "node_b"
    proc = start(root, env, "read:notes.txt then write:README.md=edited remotely then write:src/new.txt=added "
                            "then delegate:implementer:write:impl.txt=from the sub-agent")
    assert proc.returncode == 0, proc.stderr
    assert f"on Ray node {cluster.workers['node_b'].node_id}" in proc.stderr.splitlines()[0]
    assert "my own uncommitted line" in proc.stdout  # the agent saw the tree as it is here, uncommitted work included
    assert (root / "README.md").read_text() == "edited remotely"
    assert (root / "src" / "new.txt").read_text() == "added"
    assert (root / "impl.txt").read_text() == "from the sub-agent"
    assert (root / "notes.txt").read_text() == "notes\nmy own uncommitted line\n"
    assert "applied the session's changes to your working tree (3 files)" in proc.stderr
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(root, "for-each-ref", "refs/strawpot-remote/") == ""
    data = record(repo)
    assert data["runner"]["kind"] == "ray" and data["runner"]["node"] == cluster.workers["node_b"].node_id
    assert data["state"] == "succeeded" and data["isolation"]["state"] == "merged"
    assert {a["role"] for a in data["agents"]} == {"orchestrator", "implementer"}
    for agent in data["agents"]:  # the agents' workspaces came back into this run folder
        assert Path(agent["workspace"]).parent.parent == repo.sessions_dir / data["run_id"]
        assert (Path(agent["workspace"]) / "result").is_file()
    listed = json.loads(strawpot("sessions", "--json", cwd=root, env=env).stdout)["sessions"]
    assert [(s["run_id"], s["state"]) for s in listed] == [(data["run_id"], "succeeded")]
    shown = strawpot("sessions", "show", data["run_id"], cwd=root, env=env)
    assert shown.returncode == 0 and shown.stdout.startswith(f"run {data['run_id']}: role orchestrator, succeeded")
    agents = strawpot("agents", data["run_id"], cwd=root, env=env)
    assert agents.returncode == 0 and "implementer" in agents.stdout, agents.stderr


def test_a_failed_remote_session_keeps_its_work_in_its_worktree_and_leaves_the_tree_alone(
        repo: ProjectFixture, env: dict[str, str]) -> None:
    proc = start(repo.root, env, "write:README.md=half done then fail:3")
    assert proc.returncode == 3, proc.stderr
    assert (repo.root / "README.md").read_text() == "original\n"
    data = record(repo)
    assert data["state"] == "failed" and data["isolation"]["state"] == "kept"
    kept = Path(data["isolation"]["path"])  # as a local worktree session's: the work came back into its worktree
    assert (kept / "README.md").read_text() == "half done"
    assert "strawpot sessions --prune` removes it" in proc.stderr


def test_merge_branch_keeps_a_remote_sessions_work_on_its_branch(repo: ProjectFixture, env: dict[str, str]) -> None:
    proc = start(repo.root, env, "write:README.md=on the branch", "--merge", "branch")
    assert proc.returncode == 0, proc.stderr
    branch = f"strawpot/{record(repo)['run_id']}"
    assert f"merge it with `git merge {branch}`" in proc.stderr
    assert git(repo.root, "show", f"{branch}:README.md") == "on the branch"
    assert (repo.root / "README.md").read_text() == "original\n"


def test_two_sessions_at_once_run_on_both_nodes_and_both_merge_back(repo: ProjectFixture, env: dict[str, str],
                                                                     cluster: Any) -> None:
    procs = [subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--task",
                               f"sleep:3 then write:{name}.txt={name}"], cwd=repo.root, text=True,
                              env={**env, "STRAWPOT_RUNNER_RAY_RESOURCES": name}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for name in NODES]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    for name in NODES:
        assert (repo.root / f"{name}.txt").read_text() == name
    nodes = {json.loads(p.read_text())["runner"]["node"] for p in repo.sessions_dir.glob("*/session.json")}
    assert nodes == {cluster.workers[name].node_id for name in NODES}


def a_job(project: ProjectFixture, tmp_path: Path) -> Job:
    """What `start` would send a worker for the built git project: its HEAD as the bundle, its installed tree."""
    bundle = tmp_path / "base.bundle"
    git(project.root, "update-ref", "refs/strawpot-remote/x", "HEAD")
    git(project.root, "bundle", "create", "-q", str(bundle), "refs/strawpot-remote/x")
    return Job(run_id="run_20260101_000000_abcdef", bundle=bundle.read_bytes(), tree=pack_tree(project.state_dir),
               lock=(project.root / "strawpot.lock").read_bytes(),
               manifest=(project.root / "strawpot.toml").read_bytes(), rel="", args=("--task", "write:x.txt=x"),
               ref="refs/strawpot-remote/x")


def test_a_worker_refuses_an_installed_tree_that_does_not_match_the_lock(project: ProjectFixture,
                                                                        tmp_path: Path) -> None:
    project.build()
    a_git_project(project.root)
    tree = project.state_dir / "agents" / "stub-agent" / "AGENT.md"
    tree.write_text(tree.read_text() + "\nchanged after the lock was written\n")
    result = RemoteSession("node-1").run(a_job(project, tmp_path))
    assert result.refused.startswith("the installed packages it was sent do not match strawpot.lock: agent stub-agent: "
                                     "AGENT.md"), result.refused
    assert result.exit_code is None and result.patch == b"" and result.record == b""


def test_an_address_that_does_not_answer_is_one_line_and_exit_7_with_nothing_started(
        project: ProjectFixture, env: dict[str, str]) -> None:
    project.build()
    a_git_project(project.root)
    for address in ("127.0.0.1:9", "ray://10.255.255.1:10001"):
        began = time.monotonic()
        proc = strawpot("start", "--headless", "--runner", "ray", "--task", "echo:hi", cwd=project.root,
                        env={**env, "STRAWPOT_RUNNER_RAY_ADDRESS": address, "STRAWPOT_RUNNER_RAY_CONNECT_TIMEOUT": "1"})
        assert proc.returncode == 7, proc.stderr
        assert proc.stderr.splitlines() == [f"error: the Ray cluster at {address} does not answer within 1 s; "
                                            "nothing was started (is it running? check [runner.ray] address, "
                                            "docs/deploy.md)"], proc.stderr
        assert time.monotonic() - began < 30
    assert not project.sessions_dir.exists() or not any(project.sessions_dir.iterdir())
    assert git(project.root, "branch", "--format=%(refname:short)").split() == ["main"]


def test_without_ray_installed_the_runner_is_one_line_naming_the_extra(project: ProjectFixture, tmp_path: Path,
                                                                       env: dict[str, str]) -> None:
    project.build()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['ray'] = None\n")  # as if not installed
    proc = strawpot("start", "--headless", "--runner", "ray", "--task", "echo:hi", cwd=project.root,
                    env={**env, "PYTHONPATH": str(site)})
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.splitlines() == ["error: --runner ray needs Ray, which is not installed: "
                                        "pip install 'strawpot[ray]'"]
    assert not project.sessions_dir.exists()



@pytest.mark.parametrize("how", ["cancel", "sigterm", "sigint"])
def test_a_remote_session_is_stopped_by_cancel_sigterm_or_ctrl_c_and_ends_as_a_local_run_would(
        repo: ProjectFixture, env: dict[str, str], how: str) -> None:
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--task",
                             "write:README.md=never merged then sleep:300"], cwd=repo.root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started_remotely(proc)
    data = settled(repo)
    began = time.monotonic()
    if how == "cancel":
        cancelled = strawpot("cancel", data["run_id"], cwd=repo.root, env=env)
        assert cancelled.returncode == 0, cancelled.stderr
    else:
        proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    assert time.monotonic() - began < 90  # well before the agent's 300 s (stopping gives it 30 s)
    ended = "cancelled" if how == "cancel" else "interrupted"  # as `strawpot cancel` and Ctrl-C end a local run
    assert (f"run {data['run_id']} cancelled (exit code 130)" if how == "cancel" else
            "interrupted: stopped 1 agent") in err
    data = record(repo)
    assert data["state"] == ended and data["exit_code"] == 130 and data["isolation"]["state"] == "kept"
    assert [a["state"] for a in data["agents"]] == ["cancelled"]
    assert (repo.root / "README.md").read_text() == "original\n"


def test_a_remote_runs_events_and_agents_show_here_while_it_runs(repo: ProjectFixture, env: dict[str, str]) -> None:
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--progress", "json", "--task",
                             "write:README.md=never merged then sleep:300"], cwd=repo.root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        seen = []
        while not seen or seen[-1]["event"] != "spawn":  # the progress stream, as a local run's
            line = proc.stderr.readline()
            assert line, f"start ended before its agent's spawn came: {seen}"
            seen.append(json.loads(line))
        assert proc.poll() is None  # the agent sleeps 300 s: this came while the run went on
        data = settled(repo)  # the agent is in the local record too (60 s: a loaded machine is slow)
        [agent] = data["agents"]
        assert agent["role"] == "orchestrator" and agent["state"] == "running"
        assert agent["workspace"].startswith(str(repo.sessions_dir / data["run_id"]))
        trace = (repo.sessions_dir / data["run_id"] / "trace.jsonl").read_text()
        assert '"agent_started"' in trace  # what the UI's run page and `sessions show` read
        shown = strawpot("sessions", "show", data["run_id"], cwd=repo.root, env=env)
        assert shown.returncode == 0 and "running" in shown.stdout and agent["agent_id"] in shown.stdout, shown.stdout
        assert strawpot("cancel", data["run_id"], cwd=repo.root, env=env).returncode == 0
        _, rest = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    events = [event["event"] for event in seen] + [json.loads(line)["event"] for line in rest.splitlines()]
    assert events.count("spawn") == 1 and events[-1] == "end", events  # told once: not again when the record came


def test_a_lost_node_fails_its_run_with_one_line_naming_it_and_leaves_the_tree_alone(
        repo: ProjectFixture, env: dict[str, str], cluster: Any) -> None:
    doomed = cluster.add_node(num_cpus=1, resources={"node_c": 1}, object_store_memory=80 * MB)
    cluster.wait_for_nodes()
    # the agent's sleep outlasts remove_node and Ray noticing it (seconds on a loaded machine); communicate gives 120
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--task",
                             "write:README.md=never merged then sleep:300"], cwd=repo.root, text=True,
                            env={**env, "STRAWPOT_RUNNER_RAY_RESOURCES": "node_c"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert doomed.node_id in started_remotely(proc)
        settled(repo)
        cluster.remove_node(doomed)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: run {record(repo)['run_id']} failed: Ray node {doomed.node_id} "), line
    assert line.endswith("running it was lost; your working tree was not touched"), line
    data = record(repo)
    assert data["state"] == "failed" and data["runner"]["node"] == doomed.node_id
    assert (repo.root / "README.md").read_text() == "original\n"
    assert git(repo.root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(repo.root, "worktree", "list").count("\n") == 1


def test_a_run_folder_file_too_large_to_bring_back_is_left_out_and_named(tmp_path: Path) -> None:
    import io
    import tarfile

    from orchestrator.remote_session import RECORD_FILE_MAX, pack_run

    folder = tmp_path / "run"
    (folder / "agents" / "a-1").mkdir(parents=True)
    (folder / "session.json").write_text("{}")
    (folder / "agents" / "a-1" / "huge.log").write_bytes(b"x" * (RECORD_FILE_MAX + 1))
    (folder / "agents" / "a-1" / "result").write_text("done")
    (folder / "agents" / "a-1" / "link").symlink_to("/etc/passwd")
    packed, left_out = pack_run(folder)
    assert left_out == ("agents/a-1/huge.log",)
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["agents", "agents/a-1", "agents/a-1/result", "session.json"]
    assert pack_run(tmp_path / "none") == (b"", ())


def test_a_refusal_on_the_worker_is_reported_here_and_ends_the_run_failed_with_nothing_left(
        project: ProjectFixture) -> None:
    from orchestrator.remote_job import land
    from orchestrator.remote_session import Result
    from orchestrator.session import Session
    from orchestrator.worktree import WorktreeIsolator
    from strawpot.model.errors import IntegrityFailure

    project.build()
    a_git_project(project.root)
    session = Session.create(project.sessions_dir, "orchestrator", "t", "run_20260101_000000_abcdef")
    isolator = WorktreeIsolator()
    env = isolator.create(session.run_id, project.root)
    refused = Result("n1", "h1", None, refused="the installed packages it was sent do not match strawpot.lock: x")
    with pytest.raises(IntegrityFailure) as caught:
        land(session, env, isolator, project.root, refused)
    assert caught.value.message == ("the worker on Ray node n1 (h1) refused run run_20260101_000000_abcdef: the "
                                    "installed packages it was sent do not match strawpot.lock: x")
    assert caught.value.exit_code == 5
    saved = record(project)
    assert saved["state"] == "failed" and saved["runner"]["node"] == "n1" and saved["isolation"]["state"] == "removed"
    assert git(project.root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(project.root, "worktree", "list").count("\n") == 1
    assert git(project.root, "status", "--porcelain") == ""


def test_a_cancel_before_the_session_began_ends_the_run_cancelled_with_nothing_started_or_left(
        project: ProjectFixture, tmp_path: Path) -> None:
    from orchestrator.remote_job import land
    from orchestrator.session import Session
    from orchestrator.worktree import WorktreeIsolator

    project.build()
    a_git_project(project.root)
    job = a_job(project, tmp_path)
    worker = RemoteSession("node-1", launch=lambda *a: pytest.fail("a cancelled session was started"))
    assert worker.stop() is False  # `strawpot cancel` reached the worker before the run did
    result = worker.run(job)
    assert result.cancelled and result.exit_code is None and result.patch == b"" and result.record == b""

    session = Session.create(project.sessions_dir, "orchestrator", "t", job.run_id)
    isolator = WorktreeIsolator()
    env = isolator.create(session.run_id, project.root)
    ended = land(session, env, isolator, project.root, result)
    assert (ended.state, ended.exit_code) == ("cancelled", 130)
    saved = record(project)
    assert saved["state"] == "cancelled" and saved["isolation"]["state"] == "removed"
    assert git(project.root, "worktree", "list").count("\n") == 1
    assert git(project.root, "branch", "--format=%(refname:short)").split() == ["main"]


def test_ctrl_c_while_ray_is_joined_ends_the_run_failed_with_its_worktree_removed(
        project: ProjectFixture, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.ray_runner import RayRunner
    from tests._cli import strawpot_here

    def interrupted(self: RayRunner) -> None:
        raise KeyboardInterrupt  # Ctrl-C in the second Ray takes to import and join, after the worktree was made

    monkeypatch.setattr(RayRunner, "join", interrupted)
    project.build()
    a_git_project(project.root)
    proc = strawpot_here("start", "--headless", "--runner", "ray", "--task", "write:x.txt=x", cwd=project.root,
                         env={**env, **IDENTITY, "STRAWPOT_RUNNER_RAY_ADDRESS": "auto"})
    assert proc.returncode == 1, proc.stderr
    assert f"error: run {record(project)['run_id']} was interrupted before it started" in proc.stderr
    data = record(project)
    assert data["state"] == "failed" and data["isolation"]["state"] == "removed"
    assert git(project.root, "worktree", "list").count("\n") == 1
    assert git(project.root, "branch", "--format=%(refname:short)").split() == ["main"]


def _records(project: ProjectFixture) -> list[dict[str, Any]]:
    """Every run's local record that reads whole now (a record being replaced is skipped until the next look)."""
    found = []
    for path in project.sessions_dir.glob("*/session.json"):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return found


def test_six_scheduled_sessions_fan_out_onto_the_cluster_across_both_nodes_and_all_merge_back(
        repo: ProjectFixture, env: dict[str, str], cluster: Any, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """Six schedules due at once onto the cluster (three with `--runner ray`, three by `[session] runner = "ray"`)
    and one with `--runner local`: the scheduler starts them within max_parallel, the six run side by side on the
    cluster's two worker nodes and all merge back; the local one runs here."""
    from datetime import UTC, datetime, timedelta

    from orchestrator.scheduler import Scheduler
    from orchestrator.schedules import Schedule, ScheduleStore
    from tests._fake_clock import Clock

    for name, value in {**env, "STRAWPOT_SESSION_RUNNER": "ray"}.items():
        monkeypatch.setenv(name, value)  # the scheduler's `strawpot start` children inherit this process's
    store, t0 = ScheduleStore(tmp_path / "data"), datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    names = [f"fan-{i}" for i in range(6)]
    go = tmp_path / "go"  # each session's agent waits for it: the test makes it once all six run on the cluster
    for i, name in enumerate([*names, "here"]):
        store.add(Schedule(name=name, cron="0 9 * * *", project=repo.root, role="orchestrator",
                           runner="local" if name == "here" else "ray" if i % 2 else "",
                           task=f"wait-for:{go} then write:{name}.txt={name}", created=t0))
    scheduler = Scheduler(store, now=Clock(t0 + timedelta(hours=1, seconds=1)), say=lambda line: None,
                          max_parallel=7)
    most_at_once = [0]  # remote sessions seen running on the cluster at one look

    def release_once_all_six_run() -> None:
        deadline = time.monotonic() + 240
        while most_at_once[0] < 6 and time.monotonic() < deadline:
            now = sum(1 for data in _records(repo) if data.get("runner", {}).get("node")
                      and any(agent.get("state") == "running" for agent in data.get("agents", ())))
            most_at_once[0] = max(most_at_once[0], now)
            time.sleep(0.1)
        go.touch()  # also when they never all ran: the assertions below then say so

    releaser = threading.Thread(target=release_once_all_six_run, daemon=True)
    releaser.start()
    scheduler.tick()
    scheduler.wait_idle(timeout=300)
    releaser.join(timeout=60)
    assert most_at_once[0] == 6, f"at most {most_at_once[0]} of the six sessions ran on the cluster at once"
    runs = [store.history(name)[0] for name in names]
    assert [(r.outcome, r.exit_code) for r in runs] == [("succeeded", 0)] * 6, [r.error for r in runs]
    for name in names:
        assert (repo.root / f"{name}.txt").read_text() == name
    sessions = [json.loads((repo.sessions_dir / str(r.run_id) / "session.json").read_text()) for r in runs]
    assert [(s["runner"]["kind"], s["isolation"]["state"]) for s in sessions] == [("ray", "merged")] * 6
    used = {s["runner"]["node"] for s in sessions}
    assert used == {cluster.workers[name].node_id for name in NODES}, used
    assert max(s["started_at"] for s in sessions) < min(s["ended_at"] for s in sessions)  # all six at once
    assert git(repo.root, "branch", "--format=%(refname:short)").split() == ["main"]
    [here] = store.history("here")
    assert here.outcome == "succeeded" and (repo.root / "here.txt").read_text() == "here"
    assert json.loads((repo.sessions_dir / str(here.run_id) / "session.json").read_text())["runner"] == \
        {"kind": "local"}


def test_doctor_says_whether_the_cluster_answers_and_has_room_one_line_each(
        repo: ProjectFixture, env: dict[str, str], cluster: Any) -> None:
    env.update(STRAWPOT_SESSION_RUNNER="ray", STRAWPOT_RUNNER_RAY_RESOURCES="node_a,nowhere")
    proc = strawpot("doctor", cwd=repo.root, env=env)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "runner ray:" in line]
    assert re.fullmatch(rf"ok  runner ray: the Ray cluster at {re.escape(cluster.address)} answers: \d+ node\(s\), "
                        r"\d+ CPUs", lines[0]), lines
    free = re.fullmatch(r"ok  runner ray: (\d+) of 6 CPUs free: room for \1 session\(s\) now", lines[1])
    assert free and int(free[1]) >= 1, lines
    assert lines[2:] == ["ok  runner ray: resource node_a: on 1 node(s), free",
                         "BAD runner ray: no node of the cluster has resource nowhere: a session asking for it "
                         "never starts"], lines
    assert "    fix:     start a worker with `ray start --resources '{\"nowhere\": 1}'`, or drop it from " \
           "[runner.ray] resources" in proc.stdout
    env["STRAWPOT_RUNNER_RAY_RESOURCES"] = "node_b"
    ok = strawpot("doctor", "--json", cwd=repo.root, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    checks = json.loads(ok.stdout)["runner"]
    assert [(c["check"], c["ok"]) for c in checks] == [("cluster", True), ("cpus", True), ("resource node_b", True)]


def test_doctor_names_a_cluster_that_does_not_answer_and_the_missing_extra_only_for_the_ray_runner(
        project: ProjectFixture, env: dict[str, str], tmp_path: Path) -> None:
    project.build()
    ray_env = {**env, "STRAWPOT_SESSION_RUNNER": "ray", "STRAWPOT_RUNNER_RAY_ADDRESS": "127.0.0.1:9",
               "STRAWPOT_RUNNER_RAY_CONNECT_TIMEOUT": "1"}
    down = strawpot("doctor", cwd=project.root, env=ray_env)
    assert down.returncode == 7, down.stdout + down.stderr
    assert [line for line in down.stdout.splitlines() if "runner ray:" in line] == [
        "BAD runner ray: the Ray cluster at 127.0.0.1:9 does not answer within 1 s; nothing was started (is it "
        "running? check [runner.ray] address, docs/deploy.md)"]
    assert "    fix:     start the cluster, or fix [runner.ray] address (docs/deploy.md)" in down.stdout
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['ray'] = None\n")  # as if not installed
    missing = strawpot("doctor", cwd=project.root, env={**ray_env, "PYTHONPATH": str(site)})
    assert missing.returncode == 7, missing.stdout + missing.stderr
    assert "BAD runner ray: --runner ray needs Ray, which is not installed: pip install 'strawpot[ray]'" \
        in missing.stdout.splitlines()
    local = strawpot("doctor", "--json", cwd=project.root, env={**env, "PYTHONPATH": str(site)})
    assert local.returncode == 0, local.stdout + local.stderr
    assert json.loads(local.stdout)["runner"] == []


def test_the_uis_cancel_button_stops_a_remote_run_as_strawpot_cancel_does(
        repo: ProjectFixture, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.ui.test_ui_steer import _client, _p, _post

    for name, value in {**env, "STRAWPOT_HOME": str(tmp_path / "home")}.items():
        monkeypatch.setenv(name, value)  # the UI runs in this process, as `strawpot ui` would beside the run
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--runner", "ray", "--task",
                             "write:README.md=never merged then sleep:300"], cwd=repo.root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        started_remotely(proc)
        data = settled(repo)
        client, page = _client(repo.root), f"{_p(repo.root)}/runs/{data['run_id']}"
        [agent] = data["agents"]
        running = client.get(page)  # the run page, as for a local run: its agent, running, live
        assert running.status_code == 200 and agent["agent_id"] in running.text
        assert 'id="run-state">running<' in running.text and running.text.count(">running</td>") == 1
        began = time.monotonic()
        response = _post(client, f"{page}/cancel")  # the run page's form
        assert response.status_code == 303, response.text
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert time.monotonic() - began < 90  # well before the agent's 300 s (stopping gives it 30 s)
    data = record(repo)
    assert data["state"] == "cancelled" and [a["state"] for a in data["agents"]] == ["cancelled"]
    assert (repo.root / "README.md").read_text() == "original\n"
    ended = client.get(page)
    assert ended.status_code == 200 and 'id="run-state">cancelled<' in ended.text
    assert ended.text.count(">cancelled</td>") == 1 and ">running</td>" not in ended.text
