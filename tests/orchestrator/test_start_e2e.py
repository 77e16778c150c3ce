"""End to end through `strawpot start`: real subprocesses, the stub agent, real gRPC on loopback."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests._cli import STRAWPOT, strawpot, strawpot_here
from tests._short_paths import short_folder

pytestmark = pytest.mark.e2e


def run_in(project, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`strawpot ARGS` in the project: `sessions` (it reads the records) through main() here, the rest as a real
    process (start runs agents)."""
    if args[0] == "sessions":
        return strawpot_here(*args, cwd=project.root, env=env)
    return strawpot(*args, cwd=project.root, env=env, timeout=timeout)


def start(project, task: str, *extra: str, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return run_in(project, "start", "--headless", "--task", task, *extra, **kw)


def only_run(project) -> dict:  # type: ignore[no-untyped-def]
    runs = json.loads(run_in(project, "sessions", "--json").stdout)["sessions"]
    assert len(runs) == 1
    agents = json.loads(run_in(project, "agents", runs[0]["run_id"], "--json").stdout)["agents"]
    return {"run": runs[0], "agents": agents}


def test_two_level_delegation_chain(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project, "echo:top then delegate:implementer:echo:mid then delegate:reviewer:echo:leaf")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["top", "mid", "leaf"]
    seen = only_run(project)
    assert seen["run"]["state"] == "succeeded" and seen["run"]["exit_code"] == 0 and seen["run"]["agents"] == 3
    agents = {a["role"]: a for a in seen["agents"]}
    assert agents["orchestrator"]["parent"] is None and agents["orchestrator"]["depth"] == 0
    assert agents["implementer"]["parent"] == agents["orchestrator"]["agent_id"] and agents["implementer"]["depth"] == 1
    assert agents["reviewer"]["parent"] == agents["implementer"]["agent_id"] and agents["reviewer"]["depth"] == 2
    assert {a["state"] for a in seen["agents"]} == {"succeeded"}
    assert all(isinstance(a["pid"], int) for a in seen["agents"])
    run_dir = project.sessions_dir / seen["run"]["run_id"]
    events = [json.loads(line)["event"] for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert events.count("delegate") == 2 and events[0] == "run_started" and events[-1] == "run_finished"


def test_agents_see_the_denden_environment(project) -> None:  # type: ignore[no-untyped-def]
    project.agent_settings = {"greeting": "bonjour"}
    project.build()
    proc = start(project, "env:STRAWPOT_ROLE then env:DENDEN_PARENT_AGENT_ID then config:greeting then "
                          "delegate:reviewer:env:STRAWPOT_ROLE then env:DENDEN_PARENT_AGENT_ID then env:DENDEN_RUN_ID")
    assert proc.returncode == 0, proc.stderr
    role, no_parent, greeting, child_role, child_parent, run_id = proc.stdout.splitlines()
    seen = only_run(project)
    root = next(a for a in seen["agents"] if a["role"] == "orchestrator")
    assert (role, no_parent, greeting, child_role) == ("orchestrator", "", "bonjour", "reviewer")
    assert child_parent == root["agent_id"] and run_id == seen["run"]["run_id"]


def test_depth_limit_denies(project) -> None:  # type: ignore[no-untyped-def]
    project.policy["max_depth"] = 1
    project.build()
    proc = start(project, "delegate:implementer:echo:mid then delegate:reviewer:echo:leaf")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "mid"
    assert lines[1].startswith("DENIED DENY_DEPTH_LIMIT: delegation depth limit reached")
    assert [a["role"] for a in only_run(project)["agents"]] == ["orchestrator", "implementer"]


# `start` runs once per session (the scheduler, the UI and every test start one): a headless run to a pipe writes its
# lines without rich, the Denden server converts a task's extra fields with protobuf's json_format only when one
# carries some, and strawpot.toml is only read (tomllib; tomlkit keeps a file's layout for edits)
START_NEVER = ("rich.", "google.protobuf.json_format", "tomlkit")
START_MOST = 455  # 412 measured (471 with rich and tomlkit), plus about a tenth


def test_a_headless_start_to_a_pipe_imports_no_rich(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = strawpot("start", "--headless", "--task", "echo:top then delegate:reviewer:echo:leaf", cwd=project.root,
                    extra_env={"PYTHONPROFILEIMPORTTIME": "1"}, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["top", "leaf"]
    said = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    run_id = only_run(project)["run"]["run_id"]
    assert said[-2].startswith(f"run {run_id}: role orchestrator, Denden on unix:/") and said[-2].endswith(".sock")
    assert said[-1] == f"run {run_id} succeeded (exit code 0)"
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", proc.stderr, re.MULTILINE))
    assert "orchestrator.launch" in loaded, "the import profile was not read"
    assert sorted(m for m in loaded if m.startswith(START_NEVER) or m == "rich") == []
    assert len(loaded) <= START_MOST, f"{len(loaded)} modules imported (at most {START_MOST})"


def test_undeclared_role_is_denied(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    # reviewer declares no roles; lead is installed but the orchestrator did not declare it
    proc = start(project, "delegate:reviewer:delegate:implementer:echo:x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(
        "DENIED DENY_ROLE_NOT_ALLOWED: role 'reviewer' may not delegate to 'implementer'")
    proc = start(project, "delegate:lead:echo:x")
    assert "DENIED DENY_ROLE_NOT_ALLOWED: role 'orchestrator' may not delegate to 'lead'" in proc.stdout


def test_wildcard_role_redelegates_without_deadlock(project) -> None:  # type: ignore[no-untyped-def]
    project.orchestrator_role = "lead"
    project.build()
    proc = start(project, "delegate:lead:delegate:lead:delegate:lead:delegate:lead:echo:deep", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("DENIED DENY_DEPTH_LIMIT")  # depth 3 is the limit; no hang before it
    assert len(only_run(project)["agents"]) == 4


def test_timeout_is_reported_and_the_group_is_gone(project, group_alive, pid_alive) -> None:  # type: ignore[no-untyped-def]
    # 10 s: on a loaded machine the reviewer's Python may take seconds to start and spawn its child
    project.policy["agent_timeout"] = 10
    project.build()
    started = time.monotonic()
    proc = start(project, "delegate:reviewer:spawn:90 then sleep:90", timeout=150)
    assert time.monotonic() - started < 60  # a run that waited for the reviewer's sleep would take 90 s
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ERROR ERR_SUBAGENT_TIMEOUT: agent reviewer-")
    assert "did not finish within 10s" in proc.stdout
    reviewer = next(a for a in only_run(project)["agents"] if a["role"] == "reviewer")
    assert reviewer["state"] == "timed_out"
    assert not group_alive(reviewer["pid"])  # the agent led its own group
    spawned = Path(reviewer["workspace"]) / "spawned.pid"
    assert spawned.is_file(), "the reviewer timed out before it spawned its child"
    grandchild = int(spawned.read_text())
    assert not pid_alive(grandchild)  # the agent's own child went with its group


def test_failure_reports_exit_code_and_log_tail(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project, "delegate:reviewer:echo:partial then fail:3")
    assert proc.returncode == 0, proc.stderr
    assert "ERROR ERR_SUBAGENT_FAILURE: agent reviewer-" in proc.stdout
    assert "exited with code 3; last lines of its log:" in proc.stdout
    assert "stub-agent: fail:3" in proc.stdout


def test_exit_code_is_the_orchestrators(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project, "echo:bye then fail:4")
    assert proc.returncode == 4
    assert proc.stdout.strip() == "bye"
    assert only_run(project)["run"]["state"] == "failed"


def test_tampered_tree_refuses_to_start(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    skill = project.state_dir / "skills" / "coding" / "SKILL.md"
    skill.write_text(skill.read_text().replace("wisely", "BADLY!"))  # same size: only the hash can tell
    proc = start(project, "echo:x")
    assert proc.returncode == 5
    assert "skill coding: SKILL.md: content differs from the lock (sha256)" in proc.stderr
    assert "strawpot sync" in proc.stderr
    assert not project.sessions_dir.exists()


def test_missing_tool_refuses_before_spawning(project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    proc = start(project, "echo:x", env={**os.environ, "PATH": str(empty)})
    assert proc.returncode == 7
    assert "agent stub-agent: tool 'python3' is not on PATH (install: sudo apt-get install -y python3)" in proc.stderr
    assert not project.sessions_dir.exists()


def test_headless_needs_a_task(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = run_in(project, "start", "--headless")
    assert proc.returncode == 2
    assert "--headless needs --task" in proc.stderr


def test_interrupt_stops_every_agent(project, group_alive) -> None:  # type: ignore[no-untyped-def]
    project.policy["agent_timeout"] = 300  # the interrupt ends them; a loaded machine is slow
    project.build()
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "delegate:implementer:spawn:300 then sleep:300"],
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        agents = _wait_for_running(project, 2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "stopped 2 agents" in err
    for agent in agents:
        assert not group_alive(agent["pid"])


def _wait_for_running(project, count: int, timeout: float = 60) -> list[dict]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in project.sessions_dir.glob("*/session.json"):
            try:
                agents = json.loads(path.read_text())["agents"]
            except (json.JSONDecodeError, FileNotFoundError):
                continue
            running = [a for a in agents if a["state"] == "running"]
            if len(running) >= count:
                return running
        time.sleep(0.05)
    raise AssertionError(f"{count} agents never ran")


def test_sessions_and_agents_tables(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    assert "no sessions yet" in run_in(project, "sessions").stderr
    assert start(project, "delegate:reviewer:echo:ok").returncode == 0
    run_id = only_run(project)["run"]["run_id"]
    listing = run_in(project, "sessions")
    assert listing.returncode == 0 and run_id in listing.stdout and "succeeded" in listing.stdout
    agents = run_in(project, "agents", run_id)
    assert agents.returncode == 0
    assert "orchestrator-" in agents.stdout and "reviewer-" in agents.stdout and "stub-agent" in agents.stdout
    missing = run_in(project, "agents", "run_nope")
    assert missing.returncode == 2 and "no run 'run_nope'" in missing.stderr


def test_delegation_over_the_private_unix_socket(project) -> None:  # type: ignore[no-untyped-def]
    with short_folder() as short:
        project.root = short
        project.build()
        proc = start(project, "env:DENDEN_ADDR then env:DENDEN_TOKEN then delegate:implementer:env:DENDEN_ADDR "
                              "then delegate:reviewer:echo:leaf")
        assert proc.returncode == 0, proc.stderr
        addr, token, child_addr, leaf = proc.stdout.splitlines()
        run_dir = project.sessions_dir / only_run(project)["run"]["run_id"]
        assert addr == child_addr and addr.startswith("unix:/") and addr.endswith("/denden.sock")
        socket_folder = Path(addr.removeprefix("unix:")).parent
        assert socket_folder.name.startswith("strawpot-") and not (run_dir / "denden.sock").exists()
        assert (token, leaf) == ("", "leaf")
        assert not socket_folder.exists()  # gone with the server


def test_delegation_over_tcp_carries_the_token(project) -> None:  # type: ignore[no-untyped-def]
    project.denden = {"transport": "tcp"}
    project.build()
    proc = start(project, "env:DENDEN_ADDR then env:DENDEN_TOKEN then delegate:reviewer:env:DENDEN_TOKEN "
                          "then echo:leaf")
    assert proc.returncode == 0, proc.stderr
    addr, token, child_token, leaf = proc.stdout.splitlines()
    assert addr.startswith("127.0.0.1:") and len(token) >= 32
    assert (child_token, leaf) == (token, "leaf")
    run_dir = project.sessions_dir / only_run(project)["run"]["run_id"]
    assert token not in (run_dir / "session.json").read_text()  # the secret is in the agents' env only


def test_delegation_from_a_deep_project_path(project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project.root = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 6), "my project")
    project.root.mkdir(parents=True)
    project.build()
    proc = start(project, "env:DENDEN_ADDR then delegate:reviewer:echo:leaf")
    assert proc.returncode == 0, proc.stderr
    addr, leaf = proc.stdout.splitlines()
    socket_path = addr.removeprefix("unix:")
    assert addr.startswith("unix:/") and len(socket_path) <= 107 and leaf == "leaf"
    assert only_run(project)["run"]["denden_addr"] == addr
    assert not Path(socket_path).parent.exists()  # the short private folder went with the run
