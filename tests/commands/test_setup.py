"""`strawpot setup AGENT` as a user runs it: the agent's setup on the caller's terminal, its exit code passed on."""

from __future__ import annotations

import pytest

from tests._cli import strawpot
from tests.orchestrator._agents import typed_agent

pytestmark = pytest.mark.e2e


def test_setup_runs_on_the_callers_terminal_and_passes_its_exit_code(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path, setup_exit=3))
    proc = strawpot("setup", "stub-agent", cwd=project.root, env=env, input="alice\n")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "login: logged in as alice\n"
    missing = strawpot("setup", "ghost-agent", cwd=project.root, env=env)
    assert missing.returncode == 7 and "ghost-agent" in missing.stderr
