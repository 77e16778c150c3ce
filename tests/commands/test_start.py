"""`strawpot start` as a user runs it: params, env, no task, --attach, --progress json, an interrupted start."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import STRAWPOT, strawpot
from tests.commands._runs import only_run_id, running, start
from tests.orchestrator._agents import typed_agent

pytestmark = pytest.mark.e2e


# -- params ------------------------------------------------------------------------------------------------


def test_params_are_typed_defaults_then_settings_then_param_flags(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.agent_settings = {"turns": 4, "greeting": "bonjour"}
    project.build(typed_agent(tmp_path))
    proc = start(project, "config:turns then config:careful then config:greeting",
                 "--param", "careful=yes", "--param", "greeting=hi", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["4", "True", "hi"]  # a boolean in --config, not the text "yes"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--param", "turns=many"), "--param: param 'turns' of agent stub-agent: 'many' is not an integer"),
        (("--param", "colour=red"), "--param: agent stub-agent has no param 'colour' (its params: careful, "
                                    "greeting, python, turns)"),
        (("--param", "turns"), "--param 'turns': expected NAME=VALUE"),
    ],
)
def test_a_bad_param_flag_is_exit_2_before_anything_runs(project, tmp_path, env, args, message) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    proc = start(project, "echo:x", *args, env=env)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not project.sessions_dir.exists()


def test_a_setting_of_the_wrong_type_is_exit_2(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.agent_settings = {"careful": "yes please"}
    project.build(typed_agent(tmp_path))
    proc = start(project, "echo:x", env=env)
    assert proc.returncode == 2
    assert "strawpot.toml [agents.stub-agent]: param 'careful' of agent stub-agent: 'yes please' is not a boolean" \
        in proc.stderr


# -- env ---------------------------------------------------------------------------------------------------

SKILL_WITH_ENV = """\
---
name: planning
description: How to plan
metadata:
  strawpot:
    env:
      GH_TOKEN:
        required: true
        description: GitHub token for the planning board
---

Plan.
"""


def test_headless_lists_every_missing_variable_with_its_description(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.skills["planning"] = SKILL_WITH_ENV
    project.build(typed_agent(tmp_path))
    proc = start(project, "echo:x", env={**env, "STUB_TOKEN": ""})  # empty counts as missing
    assert proc.returncode == 7, proc.stderr
    assert "2 required environment variables not set" in proc.stderr
    assert "STUB_TOKEN (required by agent stub-agent): Token the stub agent pretends to need" in proc.stderr
    assert "GH_TOKEN (required by skill planning): GitHub token for the planning board" in proc.stderr
    assert not project.sessions_dir.exists()


def test_values_from_the_global_config_are_exported_to_the_agents_that_need_them(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.skills["planning"] = SKILL_WITH_ENV
    project.build(typed_agent(tmp_path))
    Path(env["STRAWPOT_CONFIG_DIR"], "config.toml").write_text(
        '[agents.stub-agent.env]\nSTUB_TOKEN = "from-config"\n\n[skills.planning.env]\nGH_TOKEN = "gh"\n')
    del env["STUB_TOKEN"]
    proc = start(project, "env:STUB_TOKEN then env:GH_TOKEN then delegate:reviewer:env:STUB_TOKEN then env:GH_TOKEN then echo:end",
                 env=env)
    assert proc.returncode == 0, proc.stderr
    # the reviewer's role does not stage `planning`, so it does not get that skill's token
    assert proc.stdout.splitlines() == ["from-config", "gh", "from-config", "", "end"]


def test_env_values_in_the_project_file_are_refused(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    manifest = project.root / "strawpot.toml"
    manifest.write_text(manifest.read_text().replace('stub-agent = { version = "*", ',
                                                     'stub-agent = { version = "*", env = { STUB_TOKEN = "x" }, '))
    proc = start(project, "echo:x", env=env)
    assert proc.returncode == 2
    assert "strawpot.toml:8: [agents.stub-agent.env]: environment values do not belong in the project file" in proc.stderr


# -- start without a task ----------------------------------------------------------------------------------


def test_no_terminal_and_no_task_is_exit_2(project, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = strawpot("start", cwd=project.root, env=env, input="")
    assert proc.returncode == 2
    assert "no --task and no terminal" in proc.stderr and not project.sessions_dir.exists()


def test_attach_tmux_without_tmux_is_exit_2(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    no_tmux = tmp_path / "no-tmux"
    no_tmux.mkdir()
    (no_tmux / "python3").symlink_to(sys.executable)
    proc = strawpot("start", "--task", "echo:x", "--attach", "tmux", cwd=project.root, env={**env, "PATH": str(no_tmux)})
    assert proc.returncode == 2
    assert "--attach tmux: tmux is not on PATH" in proc.stderr and not project.sessions_dir.exists()


def test_attach_of_an_ended_run_is_a_clear_error(project, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    assert start(project, "echo:done", env=env).returncode == 0
    run_id = only_run_id(project)
    proc = strawpot("attach", run_id, cwd=project.root, env=env)
    assert proc.returncode == 2
    assert f"run {run_id} has ended (succeeded, exit code 0); there is nothing to attach to" in proc.stderr
    assert strawpot("attach", "run_nope", cwd=project.root, env=env).returncode == 2


# -- progress json -----------------------------------------------------------------------------------------


def test_progress_json_is_one_line_per_event(project, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = start(project, "delegate:implementer:delegate:lead:echo:x", "--progress", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stderr.splitlines()]  # every stderr line is an event
    assert [e["event"] for e in events] == ["warning", "spawn", "delegate", "spawn", "deny", "end", "end", "end"]
    run_id = only_run_id(project)
    assert all(e["v"] == 1 and e["run_id"] == run_id for e in events)
    warning, root, delegate, child, deny, child_end, root_end, run_end = events
    assert warning["message"].startswith("role orchestrator delegates, but the denden skill is not locked")
    assert (root["role"], root["parent"], root["agent"]) == ("orchestrator", None, "stub-agent")
    assert delegate["from"] == root["agent_id"] and delegate["role"] == "implementer"
    assert child["parent"] == root["agent_id"] and isinstance(child["pid"], int)
    assert (deny["from"], deny["role"], deny["code"]) == (child["agent_id"], "lead", "DENY_ROLE_NOT_ALLOWED")
    assert (child_end["agent_id"], child_end["state"], child_end["scope"]) == (child["agent_id"], "succeeded", "agent")
    assert root_end["agent_id"] == root["agent_id"]
    assert (run_end["scope"], run_end["state"], run_end["exit_code"]) == ("run", "succeeded", 0)


def test_interrupted_start_leaves_no_agents(project, env, group_alive) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "sleep:30", "--progress", "json"],
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _, agents = running(project, 1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert json.loads(err.splitlines()[-1])["state"] == "interrupted"
    assert json.loads(next(project.sessions_dir.glob("*/session.json")).read_text())["exit_code"] == 130
    assert not group_alive(agents[0]["pid"])
