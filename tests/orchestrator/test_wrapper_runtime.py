"""WrapperRuntime: build output validation, the build protocol, process groups, timeouts and kills."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orchestrator.binding import merge_config
from orchestrator.runtime import (
    LOG_FILE,
    PID_FILE,
    BuildRequest,
    LaunchSpec,
    RuntimeFailure,
    WrapperRuntime,
    parse_build_output,
    start_process,
)
from strawpot.model.errors import UsageError
from strawpot.model.params import ParamSpec
from strawpot.model.wrapper import BuildOutputError


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("", "printed nothing"),
        ("starting...\n{\"cmd\": [\"x\"]}", "is not JSON"),
        ("[\"python\"]", "must print a JSON object, not a array"),
        ("{}", "missing key: cmd"),
        ('{"cmd": []}', "'cmd' must be a list of strings, a program first"),
        ('{"cmd": "python agent.py"}', "'cmd' must be a list of strings, a program first"),
        ('{"cmd": ["python", 3]}', "'cmd' must be a list of strings, a program first"),
        ('{"cmd": [""]}', "'cmd' must be a list of strings, a program first"),
        ('{"cmd": ["python"], "cwd": 5}', "'cwd' must be a path string"),
        ('{"cmd": ["python"], "cwd": "/no/such/dir"}', "is not a directory"),
        ('{"cmd": ["python"], "env": {"N": 5}}', "'env' value of N must be a string, got number 5"),
        ('{"cmd": ["python"], "env": {"N": ["a"]}}', "'env' value of N must be a string, got array"),
        ('{"cmd": ["python"], "env": {"N": null}}', "'env' value of N must be a string, got null"),
        ('{"cmd": ["python"], "env": "N=1"}', "'env' must be an object of string values, got string"),
        ('{"cmd": ["python"], "env": {"": "x"}}', "'env' name \"\" is not a valid variable name"),
        ('{"cmd": ["python"], "env": {"A=B": "x"}}', "'env' name \"A=B\" is not a valid variable name"),
    ],
)
def test_parse_build_output_rejects(stdout: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(BuildOutputError, match=message):
        parse_build_output(stdout, tmp_path)


def test_parse_build_output_accepts_and_defaults_cwd(tmp_path: Path) -> None:
    assert parse_build_output('{"cmd": ["a", "b"]}\n', tmp_path) == LaunchSpec(["a", "b"], str(tmp_path))
    assert parse_build_output(json.dumps({"cmd": ["a"], "cwd": "/"}), tmp_path).cwd == "/"
    assert parse_build_output(json.dumps({"cmd": ["a"], "env": {"M": "x"}}), tmp_path).env == {"M": "x"}


def test_a_megabyte_env_value_is_refused_naming_the_wrapper_and_the_output_is_cut(tmp_path: Path) -> None:
    wrapper = _wrapper(tmp_path, """
        import json
        print(json.dumps({"cmd": ["true"], "env": {"LLM_MODEL": "m" * (1024 * 1024)}}))
    """)
    with pytest.raises(RuntimeFailure) as info:
        WrapperRuntime("openhands-like", wrapper).build(_request(tmp_path), os.environ)
    message = str(info.value)
    assert message.startswith("openhands-like: wrapper build output: 'env' value of LLM_MODEL is 1048576 characters, "
                              "more than the limit of 32768")
    assert len(message) < 3000  # the output is shown cut, not a megabyte of it


def test_the_wrappers_env_is_merged_over_the_agents_and_files_dirs_are_passed(tmp_path: Path) -> None:
    wrapper = _wrapper(tmp_path, """
        import json, sys
        args = sys.argv[1:]
        files = [args[i + 1] for i, a in enumerate(args) if a == "--files-dir"]
        script = "import os; print(os.environ['A'], os.environ['B'])"
        print(json.dumps({"cmd": [sys.executable, "-c", script], "env": {"B": "from-wrapper", "FILES": ";".join(files)}}))
    """)
    request = _request(tmp_path, files_dirs=[tmp_path / "f1", tmp_path / "f2"])
    runtime = WrapperRuntime("w", wrapper)
    assert runtime.build(request, os.environ).env["FILES"] == f"{tmp_path / 'f1'};{tmp_path / 'f2'}"
    proc = runtime.spawn(request, {**os.environ, "A": "agent", "B": "agent"})
    assert proc.wait(60) == 0
    assert proc.log_tail() == "agent from-wrapper"


def _wrapper(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "wrapper"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)
    return path


def _request(tmp_path: Path, **over: object) -> BuildRequest:
    values: dict[str, object] = dict(
        agent_id="a-1", working_dir=tmp_path, workspace=tmp_path / "ws", role_prompt="be good",
        memory_prompt="", task="do it", config={"model": "x"},
        skills_dirs=[tmp_path / "s1", tmp_path / "s2"], roles_dirs=[tmp_path / "r"],
    )
    values.update(over)
    return BuildRequest(**values)  # type: ignore[arg-type]


def test_build_passes_the_protocol_arguments(tmp_path: Path) -> None:
    wrapper = _wrapper(tmp_path, """
        import json, sys
        print(json.dumps({"cmd": ["echo"] + sys.argv[1:], "cwd": "/"}))
    """)
    spec = WrapperRuntime("w", wrapper, {"model": "x"}).build(_request(tmp_path), os.environ)
    args = spec.cmd[1:]
    assert args[0] == "build"
    pairs = dict(zip(args[1::2], args[2::2], strict=False))
    assert pairs["--agent-id"] == "a-1"
    assert pairs["--agent-workspace-dir"] == str(tmp_path / "ws")
    assert pairs["--role-prompt"] == "be good" and pairs["--memory-prompt"] == "" and pairs["--task"] == "do it"
    assert json.loads(pairs["--config"]) == {"model": "x"}
    assert [args[i + 1] for i, a in enumerate(args) if a == "--skills-dir"] == [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert [args[i + 1] for i, a in enumerate(args) if a == "--roles-dir"] == [str(tmp_path / "r")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("import sys; sys.stderr.write('no token'); sys.exit(3)", "exited with code 3: no token"),
        ("print('hello')", "output is not JSON"),
        ("print('{\"cmd\": 1}')", "'cmd' must be a list of strings"),
    ],
)
def test_build_failures_are_clear(tmp_path: Path, body: str, message: str) -> None:
    runtime = WrapperRuntime("broken-agent", _wrapper(tmp_path, body))
    with pytest.raises(RuntimeFailure, match=message) as info:
        runtime.build(_request(tmp_path), os.environ)
    assert str(info.value).startswith("broken-agent: ")


def test_missing_wrapper_is_clear(tmp_path: Path) -> None:
    with pytest.raises(RuntimeFailure, match="cannot run wrapper"):
        WrapperRuntime("x", tmp_path / "nope").build(_request(tmp_path), os.environ)


def test_spawn_logs_output_and_writes_pid(tmp_path: Path) -> None:
    wrapper = _wrapper(tmp_path, f"""
        import json
        print(json.dumps({{"cmd": [{sys.executable!r}, "-c", "import os; print('out', os.environ['X_TEST']); "
                          "import sys; print('err', file=sys.stderr); sys.exit(4)"]}}))
    """)
    proc = WrapperRuntime("w", wrapper).spawn(_request(tmp_path), {**os.environ, "X_TEST": "v"})
    assert proc.wait(60) == 4
    ws = tmp_path / "ws"
    assert (ws / PID_FILE).read_text().strip() == str(proc.pid)
    log = (ws / LOG_FILE).read_text()
    assert "out v" in log and "err" in log
    assert proc.pgid == proc.pid and proc.pid != os.getpgid(0)


SLEEPER = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
           "time.sleep(60)")


def test_timeout_then_stop_kills_the_whole_group(tmp_path: Path, reap_guard: list[int], group_alive) -> None:
    proc = start_process(LaunchSpec([sys.executable, "-c", SLEEPER], str(tmp_path)), os.environ, tmp_path / "ws")
    reap_guard.append(proc.pgid)
    deadline = time.monotonic() + 60  # generous: two Python starts on a loaded machine
    while time.monotonic() < deadline and _group_size(proc.pgid) < 2:
        time.sleep(0.05)
    assert _group_size(proc.pgid) == 2, "the agent and its child share one process group"
    assert proc.wait(0.2) is None  # still running: a timeout, not an exit
    started = time.monotonic()
    proc.stop(grace=0.5)
    assert not group_alive(proc.pgid)
    assert time.monotonic() - started < 30  # not waiting out the 60 s sleeps


def test_stop_escalates_to_sigkill_after_grace(tmp_path: Path, reap_guard: list[int], group_alive) -> None:
    # the leader and its child ignore SIGTERM: only a SIGKILL to the group ends both (stop()'s fallback, a SIGKILL
    # to the leader after grace + 5 s, would leave the child)
    stubborn = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                "print('ready', flush=True); time.sleep(60)")
    proc = start_process(LaunchSpec([sys.executable, "-c", stubborn], str(tmp_path)), os.environ, tmp_path / "ws")
    reap_guard.append(proc.pgid)
    deadline = time.monotonic() + 60
    while "ready" not in proc.log_tail() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "ready" in proc.log_tail(), "the child never ignored SIGTERM"  # else SIGTERM alone ends it: -15
    started = time.monotonic()
    code = proc.stop(grace=0.3)
    assert code == -9
    deadline = time.monotonic() + 20  # stop() reaps the leader; the killed grandchild may take a moment to go
    while group_alive(proc.pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not group_alive(proc.pgid)
    assert 0.3 <= time.monotonic() - started < 30  # the grace, then SIGKILL; not waiting out the 60 s sleep


def test_leftover_children_are_stopped_when_the_agent_exits(tmp_path: Path, reap_guard: list[int], group_alive) -> None:
    script = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])"
    proc = start_process(LaunchSpec([sys.executable, "-c", script], str(tmp_path)), os.environ, tmp_path / "ws")
    reap_guard.append(proc.pgid)
    assert proc.wait(60) == 0
    deadline = time.monotonic() + 20  # a grandchild just SIGKILLed may still be on its way out
    while group_alive(proc.pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not group_alive(proc.pgid)


def _group_size(pgid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            count += fields[0] != "Z" and int(fields[2]) == pgid
    return count


SPECS = {"model": ParamSpec("model", "string", "a"), "turns": ParamSpec("turns", "integer", 3),
         "fast": ParamSpec("fast", "boolean", None)}


@pytest.mark.parametrize(
    ("settings", "overrides", "expected"),
    [
        ({}, {}, {"model": "a", "turns": 3}),
        ({"model": "b"}, {}, {"model": "b", "turns": 3}),
        ({"model": "b", "turns": 4}, {"turns": "5", "fast": "yes"}, {"model": "b", "turns": 5, "fast": True}),
    ],
)
def test_config_is_defaults_then_settings_then_param_flags(settings: dict, overrides: dict, expected: dict) -> None:
    assert merge_config("my-agent", SPECS, settings, overrides) == expected


@pytest.mark.parametrize(
    ("settings", "overrides", "message"),
    [
        ({"turns": "3"}, {}, "strawpot.toml [agents.my-agent]: param 'turns' of agent my-agent: '3' is not an integer"),
        ({"extra": True}, {}, "strawpot.toml [agents.my-agent]: agent my-agent has no param 'extra' "
                              "(its params: fast, model, turns)"),
        ({}, {"turns": "many"}, "--param: param 'turns' of agent my-agent: 'many' is not an integer"),
        ({}, {"fast": "maybe"}, "--param: param 'fast' of agent my-agent: 'maybe' is not a boolean (use true or false)"),
        ({}, {"colour": "red"}, "--param: agent my-agent has no param 'colour' (its params: fast, model, turns)"),
    ],
)
def test_a_wrong_type_or_unknown_param_is_a_usage_error(settings: dict, overrides: dict, message: str) -> None:
    with pytest.raises(UsageError) as info:
        merge_config("my-agent", SPECS, settings, overrides)
    assert info.value.message == message and info.value.exit_code == 2
