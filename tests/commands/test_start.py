"""Params, env, progress json, cancel, doctor and setup through the real CLI: subprocesses, real gRPC on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.orchestrator._agents import typed_agent

pytestmark = pytest.mark.e2e
STRAWPOT = [sys.executable, "-c", "import sys; from strawpot.cli import main; sys.exit(main())"]


def run(project, *args: str, env: dict[str, str] | None = None, input: str | None = None,  # type: ignore[no-untyped-def]
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STRAWPOT, *args], cwd=project.root, capture_output=True, text=True, timeout=timeout,
                          env=env, input=input)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of the CLI: its own empty global config folder, STUB_TOKEN set."""
    config = tmp_path / "config"
    config.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in ("STUB_TOKEN", "GH_TOKEN")}
    return {**base, "STRAWPOT_CONFIG_DIR": str(config), "STUB_TOKEN": "t0ken"}


def start(project, task: str, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return run(project, "start", "--headless", "--task", task, *extra, env=env)


def only_run_id(project) -> str:  # type: ignore[no-untyped-def]
    [run_dir] = list(project.sessions_dir.iterdir())
    return run_dir.name


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
    proc = run(project, "start", env=env, input="")
    assert proc.returncode == 2
    assert "no --task and no terminal" in proc.stderr and not project.sessions_dir.exists()


def test_attach_tmux_without_tmux_is_exit_2(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    no_tmux = tmp_path / "no-tmux"
    no_tmux.mkdir()
    (no_tmux / "python3").symlink_to(sys.executable)
    proc = run(project, "start", "--task", "echo:x", "--attach", "tmux", env={**env, "PATH": str(no_tmux)})
    assert proc.returncode == 2
    assert "--attach tmux: tmux is not on PATH" in proc.stderr and not project.sessions_dir.exists()


def test_attach_of_an_ended_run_is_a_clear_error(project, env) -> None:  # type: ignore[no-untyped-def]
    project.build()
    assert start(project, "echo:done", env=env).returncode == 0
    run_id = only_run_id(project)
    proc = run(project, "attach", run_id, env=env)
    assert proc.returncode == 2
    assert f"run {run_id} has ended (succeeded, exit code 0); there is nothing to attach to" in proc.stderr
    assert run(project, "attach", "run_nope", env=env).returncode == 2


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


# -- cancel ------------------------------------------------------------------------------------------------


def _running(project, count: int, timeout: float = 15) -> tuple[str, list[dict]]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in project.sessions_dir.glob("*/session.json"):
            try:
                data = json.loads(path.read_text())
            except (json.JSONDecodeError, FileNotFoundError):
                continue
            running = [a for a in data["agents"] if a["state"] == "running"]
            if len(running) >= count:
                return data["run_id"], running
        time.sleep(0.05)
    raise AssertionError(f"{count} agents never ran")


def _start_in_background(project, task: str, env: dict[str, str]) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    return subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", task], cwd=project.root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_cancel_an_agent_and_its_subtree(project, env, pid_alive) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = _start_in_background(project, "delegate:implementer:delegate:reviewer:sleep:30", env)
    try:
        run_id, agents = _running(project, 3)
        implementer = next(a for a in agents if a["role"] == "implementer")
        sub = run(project, "cancel", run_id, "--agent", implementer["agent_id"], "--json", env=env)
        assert sub.returncode == 0, sub.stderr
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(json.loads(sub.stdout)["cancelled"]) == sorted(
        a["agent_id"] for a in agents if a["role"] != "orchestrator")
    # the orchestrator saw its delegation cancelled and ended normally
    assert proc.returncode == 0, err
    assert out.startswith("ERROR ERR_SUBAGENT_CANCELLED")
    assert all(not pid_alive(a["pid"]) for a in agents)


def token_bases(env: dict[str, str]) -> list[str]:
    """Where the runs of `env` keep their sockets and tokens (orchestrator.endpoint.socket_bases, in that env)."""
    import tempfile

    return [b for b in (env.get("XDG_RUNTIME_DIR"), env.get("TMPDIR") or tempfile.gettempdir(), "/tmp") if b]


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_cancel_the_whole_run(project, env, pid_alive, transport) -> None:  # type: ignore[no-untyped-def]
    project.denden = {"transport": transport}  # over TCP, cancel must send the run's token
    project.build()
    proc = _start_in_background(project, "delegate:implementer:sleep:30", env)
    try:
        run_id, agents = _running(project, 2)
        unknown = run(project, "cancel", run_id, "--agent", "ghost-1", env=env)
        assert unknown.returncode == 2 and "no agent 'ghost-1' in this run" in unknown.stderr
        from orchestrator.run_token import FOLDER_PREFIX, TOKEN_FILE

        assert not (project.sessions_dir / run_id / TOKEN_FILE).exists()  # never in the run folder
        token = next((p for base in token_bases(env) if (p := Path(base) / f"{FOLDER_PREFIX}{run_id}" / TOKEN_FILE)
                      .is_file()), None)
        assert (token is not None) == (transport == "tcp")
        if token is not None:
            assert token.stat().st_mode & 0o777 == 0o600
            assert json.loads((project.sessions_dir / run_id / "session.json").read_text())["denden_addr"] \
                .startswith("127.0.0.1:")
        whole = run(project, "cancel", run_id, env=env)
        assert whole.returncode == 0, whole.stderr
        assert f"run {run_id} cancelled" in whole.stderr
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"run {run_id} cancelled (exit code 130)" in err  # one code: shown, recorded, returned
    assert all(not pid_alive(a["pid"]) for a in agents)
    data = json.loads((project.sessions_dir / run_id / "session.json").read_text())
    assert data["state"] == "cancelled" and data["exit_code"] == 130
    assert {a["exit_code"] for a in data["agents"]} == {130}
    listed = run(project, "sessions", env=env).stdout.splitlines()[1].split()
    assert listed[listed.index("cancelled") + 1] == "130", listed
    assert {a["role"]: a["state"] for a in data["agents"]} == {"orchestrator": "cancelled", "implementer": "cancelled"}
    ended = run(project, "cancel", run_id, env=env)
    assert ended.returncode == 2 and f"run {run_id} has ended (cancelled)" in ended.stderr
    assert not (project.sessions_dir / run_id / "denden.token").exists()  # gone with its server


# -- doctor and setup --------------------------------------------------------------------------------------


def test_doctor_names_the_fix_for_each_problem(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    ok = run(project, "doctor", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok  agent stub-agent 0.1.0" in ok.stdout and "strawpot setup stub-agent" in ok.stdout

    (project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper").chmod(0o644)  # as if never built
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    bad = run(project, "doctor", "--json", env={**env, "STUB_TOKEN": "", "PATH": str(empty)})
    assert bad.returncode == 7
    [report] = json.loads(bad.stdout)["agents"]
    fixes = {p["problem"].split(" ")[0] + " " + p["problem"].split(" ")[1]: p["fix"] for p in report["problems"]}
    assert fixes["wrapper " + str(project.state_dir / "agents" / "stub-agent" / "bin" / "stub-wrapper")] == \
        "run `strawpot sync` to reinstall it from the lock"
    assert fixes["tool 'python3'"] == "install: sudo apt-get install -y python3"
    assert fixes["environment variable"].startswith("export STUB_TOKEN=..., add it under [agents.stub-agent.env]")
    assert report["ok"] is False and json.loads(bad.stdout)["ok"] is False


def test_setup_runs_on_the_callers_terminal_and_passes_its_exit_code(project, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path, setup_exit=3))
    proc = run(project, "setup", "stub-agent", env=env, input="alice\n")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "login: logged in as alice\n"
    missing = run(project, "setup", "ghost-agent", env=env)
    assert missing.returncode == 7 and "ghost-agent" in missing.stderr


def test_interrupted_start_leaves_no_agents(project, env, group_alive) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", "sleep:30", "--progress", "json"],
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _, agents = _running(project, 1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert json.loads(err.splitlines()[-1])["state"] == "interrupted"
    assert json.loads(next(project.sessions_dir.glob("*/session.json")).read_text())["exit_code"] == 130
    assert not group_alive(agents[0]["pid"])


def test_cancel_after_the_runs_strawpot_died_stops_what_it_left_running(project, env, pid_alive) -> None:  # type: ignore[no-untyped-def]
    project.build()
    proc = _start_in_background(project, "delegate:implementer:sleep:30", env)
    try:
        run_id, agents = _running(project, 2)
    finally:
        proc.kill()  # SIGKILL: no clean-up at all; its agents, each in a group of its own, keep running
        proc.communicate(timeout=20)
    assert all(pid_alive(a["pid"]) for a in agents)
    result = run(project, "cancel", run_id, env=env)
    assert result.returncode == 0, result.stderr
    assert "its strawpot process is gone; stopped the agents it left running" in result.stderr
    deadline = time.monotonic() + 10
    while any(pid_alive(a["pid"]) for a in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(a["pid"]) for a in agents)
    data = json.loads((project.sessions_dir / run_id / "session.json").read_text())
    assert data["state"] == "cancelled" and {a["state"] for a in data["agents"]} == {"cancelled"}


@pytest.mark.parametrize(("state", "code", "recorded"), [
    ("cancelled", -15, 130), ("cancelled", -9, 130), ("cancelled", None, 130), ("interrupted", 130, 130),
    ("failed", -9, 137), ("failed", 3, 3), ("succeeded", 0, 0), ("timed_out", None, None),
])
def test_one_exit_code_convention_for_ended_runs(state: str, code: int | None, recorded: int | None) -> None:
    from orchestrator.session import exit_code_for

    assert exit_code_for(state, code) == recorded


def test_cancel_sends_nothing_to_an_address_off_this_machine_and_reads_no_planted_token(project, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.endpoint import socket_bases
    from orchestrator.run_token import FOLDER_PREFIX, TOKEN_FILE, read_token

    project.build()
    run_id = "run_20260101_000000_abcdef"
    folder = project.sessions_dir / run_id
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps({
        "run_id": run_id, "state": "running", "owner_pid": os.getpid(), "denden_addr": "203.0.113.7:50051",
        "agents": [{"agent_id": "orchestrator-1", "parent": None}]}))
    secret = tmp_path / "secret"
    secret.write_text("not a token\n")
    planted = Path(socket_bases()[0]) / f"{FOLDER_PREFIX}{run_id}"
    planted.mkdir(mode=0o700)
    try:
        (planted / TOKEN_FILE).symlink_to(secret)  # a link at the token's name is not followed
        assert read_token(run_id) is None
        (planted / TOKEN_FILE).unlink()
        (planted / TOKEN_FILE).write_text("sh_planted")
        planted.chmod(0o755)  # a folder others may enter is not where a token lives
        assert read_token(run_id) is None
        assert read_token("../" + run_id) is None  # not a run id: no path is made of it
    finally:
        shutil.rmtree(planted)
    refused = run(project, "cancel", run_id, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "'203.0.113.7:50051' is not a socket or a loopback address" in refused.stderr and "nothing was sent" \
        in refused.stderr
