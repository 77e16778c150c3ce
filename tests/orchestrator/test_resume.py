"""Resumable agents (session ids, pause, `strawpot resume`) and the inputs a run records, end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from strawpot.model.kinds import Kind
from strawpot.model.package import PackageInvalid, parse_package
from tests._cli import strawpot, strawpot_here
from tests.orchestrator._agents import resumable_agent

pytestmark = pytest.mark.e2e
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def record(root: Path) -> dict:  # type: ignore[type-arg]
    [run_dir] = list((root / ".strawpot" / "sessions").iterdir())
    return json.loads((run_dir / "session.json").read_text())


def test_a_resumable_agent_is_paused_and_resumed_with_the_same_session_id(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    first = strawpot("start", "--headless", "--task", "session then pause", cwd=project.root)
    assert first.returncode == 0, first.stderr
    mode, session_id = first.stdout.split()
    assert mode == "new" and UUID.fullmatch(session_id)
    saved = record(project.root)
    [agent] = saved["agents"]
    assert saved["state"] == "paused" and agent["state"] == "paused" and agent["session_id"] == session_id
    assert f"continue it with `strawpot resume {saved['run_id']}`" in first.stderr
    assert "1 paused" in strawpot_here("sessions", cwd=project.root).stdout
    again = strawpot("resume", saved["run_id"], "--headless", "--task", "session then echo:carried on", cwd=project.root)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"resumed {session_id}", "carried on"]
    saved = record(project.root)
    [agent_after] = saved["agents"]
    assert agent_after["agent_id"] == agent["agent_id"] and agent_after["workspace"] == agent["workspace"]
    assert agent_after["state"] == "succeeded" and saved["state"] == "succeeded"


def test_the_session_id_is_recorded_before_the_agent_is_spawned(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.agent_settings = {"python": str(tmp_path / "no-such-python")}  # the spawn itself fails
    project.build(resumable_agent(tmp_path))
    proc = strawpot("start", "--headless", "--task", "echo:x", cwd=project.root)
    assert proc.returncode == 1 and "cannot start" in proc.stderr
    [agent] = record(project.root)["agents"]
    assert agent["state"] == "failed" and UUID.fullmatch(agent["session_id"])


def test_an_agent_that_does_not_declare_resume_never_sees_the_flags_and_cannot_be_resumed(project) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = strawpot("start", "--headless", "--task", "session", cwd=project.root)
    assert proc.returncode == 0 and proc.stdout.strip() == "no session"
    saved = record(project.root)
    assert saved["agents"][0]["session_id"] == ""
    refused = strawpot("resume", saved["run_id"], "--task", "x", cwd=project.root)
    assert refused.returncode == 2
    assert "cannot be resumed: its package does not declare metadata.strawpot.session.resume" in refused.stderr
    assert strawpot("resume", "run_19990101_000000_000000", "--task", "x", cwd=project.root).returncode == 2
    unknown = strawpot("resume", saved["run_id"], "--agent", "nobody", "--task", "x", cwd=project.root)
    assert unknown.returncode == 2 and "has no agent 'nobody'" in unknown.stderr


def test_the_run_records_its_inputs_and_resume_refuses_another_lock(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    assert strawpot("start", "--headless", "--task", "pause", cwd=project.root).returncode == 0
    saved = record(project.root)
    inputs = saved["inputs"]
    import hashlib

    assert inputs["lock_sha256"] == hashlib.sha256((project.root / "strawpot.lock").read_bytes()).hexdigest()
    assert inputs["packages"]["skill:planning"] == {"version": "1.0.0", "archive_sha256": None}
    assert inputs["policy"]["max_depth"] == 3 and inputs["settings"]["session.isolation"] == "none"
    assert "skill:planning@1.0.0" in saved["agents"][0]["packages"]
    assert "agent:stub-agent@0.1.0" in saved["agents"][0]["packages"]
    shown = strawpot_here("sessions", "show", saved["run_id"], cwd=project.root)
    assert shown.returncode == 0 and f"strawpot.lock sha256 {inputs['lock_sha256']}" in shown.stdout
    assert json.loads(strawpot_here("sessions", "show", saved["run_id"], "--json", cwd=project.root).stdout)["inputs"] \
        == inputs  # every package and setting it ran from
    lock = project.root / "strawpot.lock"
    text = lock.read_text()
    assert text.count('name = "planning"\nversion = "1.0.0"') == 1, text
    lock.write_text(text.replace('name = "planning"\nversion = "1.0.0"', 'name = "planning"\nversion = "1.0.1"'))
    refused = strawpot("resume", saved["run_id"], "--task", "echo:x", cwd=project.root)
    assert refused.returncode == 4
    assert f"strawpot.lock changed since run {saved['run_id']} started" in refused.stderr
    assert "skill:planning 1.0.0 -> 1.0.1" in refused.stderr


def test_a_paused_worktree_session_is_resumed_in_its_worktree_then_merged(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    root = project.root
    ident = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        if args[0] == "add":
            (root / ".gitignore").write_text(".strawpot/\n")
        subprocess.run(["git", "-C", str(root), *args], check=True, env={**os.environ, **ident})
    first = strawpot("start", "--headless", "--isolation", "worktree", "--task", "write:a.txt=one then pause", cwd=root)
    assert first.returncode == 0, first.stderr
    assert "strawpot resume" in first.stderr and not (root / "a.txt").exists()
    run_id = record(root)["run_id"]
    again = strawpot("resume", run_id, "--headless", "--task", "write:b.txt=two", cwd=root)
    assert again.returncode == 0, again.stderr
    assert (root / "a.txt").read_text() == "one" and (root / "b.txt").read_text() == "two"
    assert record(root)["isolation"]["state"] == "merged"


def test_resume_takes_the_worktree_from_git_never_from_a_forged_record(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    root = project.root
    ident = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    (root / ".gitignore").write_text(".strawpot/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env={**os.environ, **ident})
    first = strawpot("start", "--headless", "--isolation", "worktree", "--task", "write:a.txt=one then pause", cwd=root)
    assert first.returncode == 0, first.stderr
    data = record(root)
    victim = tmp_path / "victim"
    (victim / "evil" / "strawpot-worktrees").mkdir(parents=True)
    (victim / "precious.txt").write_text("mine\n")
    data["isolation"].update(path=str(victim), working_dir=str(victim), repo=str(victim), branch="main",
                             common=str(victim / "evil"), state_dir=str(victim / "evil"), rel="..")
    (root / ".strawpot" / "sessions" / data["run_id"] / "session.json").write_text(json.dumps(data))
    again = strawpot("resume", data["run_id"], "--headless", "--task", "cwd then write:b.txt=two", cwd=root)
    assert again.returncode == 0, again.stderr
    assert ".git/strawpot-worktrees/" + data["run_id"] in again.stdout  # it worked in its real worktree
    assert (root / "a.txt").read_text() == "one" and (root / "b.txt").read_text() == "two"
    assert sorted(p.name for p in victim.rglob("*")) == ["evil", "precious.txt", "strawpot-worktrees"]
    branches = subprocess.run(["git", "-C", str(root), "branch", "--format=%(refname:short)"], capture_output=True,
                              text=True, check=True).stdout.split()
    assert branches == ["main"]


@pytest.mark.parametrize(("session", "message"), [
    ("{resume: maybe}", "metadata.strawpot.session.resume: must be true or false"),
    ("{resume: true, fork: true}", "unknown key(s) fork (known: resume)"),
])
def test_the_session_declaration_is_validated(session: str, message: str) -> None:
    text = f"---\nname: a\ndescription: d\nmetadata:\n  version: 1.0.0\n  strawpot:\n    session: {session}\n---\n"
    with pytest.raises(PackageInvalid, match=re.escape(message)):
        parse_package({"AGENT.md": text.encode()}, kind=Kind.AGENT)
    ok = "---\nname: a\ndescription: d\nmetadata:\n  version: 1.0.0\n  strawpot:\n    session: {resume: true}\n---\n"
    assert parse_package({"AGENT.md": ok.encode()}, kind=Kind.AGENT).resume


def test_a_paused_sub_agent_is_resumed_by_its_id(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(resumable_agent(tmp_path))
    first = strawpot("start", "--headless", "--task", "delegate:implementer:session then pause", cwd=project.root)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("new ")  # a paused sub-agent answers its caller with its result
    saved = record(project.root)
    child = next(a for a in saved["agents"] if a["role"] == "implementer")
    assert child["state"] == "paused" and saved["state"] == "succeeded"
    again = strawpot("resume", saved["run_id"], "--agent", child["agent_id"], "--headless",
                "--task", "session then env:STRAWPOT_ROLE", cwd=project.root)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"resumed {child['session_id']}", "implementer"]
    assert next(a for a in record(project.root)["agents"] if a["role"] == "implementer")["state"] == "succeeded"
