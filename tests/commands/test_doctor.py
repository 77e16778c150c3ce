"""`strawpot doctor` as a user runs it: each problem with the line that fixes it."""

from __future__ import annotations

import json

import pytest

from tests._cli import strawpot
from tests.orchestrator._agents import typed_agent

pytestmark = pytest.mark.e2e


def test_doctor_names_the_fix_for_each_problem(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    ok = strawpot("doctor", cwd=project.root, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok  agent stub-agent 0.1.0" in ok.stdout and "strawpot setup stub-agent" in ok.stdout

    (project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper").chmod(0o644)  # as if never built
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    bad = strawpot("doctor", "--json", cwd=project.root, env={**env, "STUB_TOKEN": "", "PATH": str(empty)})
    assert bad.returncode == 7
    [report] = json.loads(bad.stdout)["agents"]
    fixes = {p["problem"].split(" ")[0] + " " + p["problem"].split(" ")[1]: p["fix"] for p in report["problems"]}
    assert fixes["wrapper " + str(project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper")] == \
        "run `strawpot sync` to reinstall it from the lock"
    assert fixes["tool 'python3'"] == "install: sudo apt-get install -y python3"
    assert fixes["environment variable"].startswith("export STUB_TOKEN=..., add it under [agents.stub-agent.env]")
    assert report["ok"] is False and json.loads(bad.stdout)["ok"] is False
