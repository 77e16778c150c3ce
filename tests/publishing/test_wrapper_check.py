"""`strawpot validate --run-wrapper`: the wrapper's `build` must print {"cmd": [...], "cwd": "..."}."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from strawpot.cli import main
from strawpot.model.errors import UsageError
from strawpot.model.package_folder import load_package
from strawpot.model.platform import current_os
from strawpot.publishing.wrapper_check import check_wrapper

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PY = sys.executable

pytestmark = pytest.mark.skipif(current_os() == "windows", reason="wrappers here are POSIX scripts")


def agent(tmp_path: Path, script: str, *, mode: int = 0o755, params: str = "") -> Path:
    """An agent whose wrapper for this OS is a Python script with `script` as its body."""
    root = tmp_path / "agent"
    (root / "bin").mkdir(parents=True)
    (root / "AGENT.md").write_text(
        f"---\nname: tiny\ndescription: d\nversion: 0.1.0\nmetadata:\n  strawpot:\n"
        f"    bin:\n      {current_os()}: bin/wrap\n{params}---\nbody\n"
    )
    wrapper = root / "bin" / "wrap"
    wrapper.write_text(f"#!{PY}\nimport json, sys\nargs = sys.argv[1:]\n{script}\n")
    wrapper.chmod(mode)
    return root


def check(root: Path, timeout: float = 20) -> str:
    with pytest.raises(UsageError) as info:
        check_wrapper(load_package(root), root, timeout=timeout)
    return info.value.message


GOOD = (
    "assert args[0] == 'build', args\n"
    "opts = dict(zip(args[1::2], args[2::2]))\n"
    "need = ['--agent-id', '--working-dir', '--agent-workspace-dir', '--role-prompt', '--memory-prompt', '--task', '--config']\n"
    "missing = [k for k in need if k not in opts]\n"
    "assert not missing, missing\n"
    "import os\n"
    "assert os.path.isdir(opts['--working-dir']) and os.path.isdir(opts['--agent-workspace-dir'])\n"
    "print(json.dumps({'cmd': ['agent', '--model', json.loads(opts['--config']).get('model', '?')], 'cwd': opts['--working-dir']}))"
)


def test_a_good_wrapper_passes_with_the_protocol_arguments(tmp_path: Path) -> None:
    params = "    params:\n      model:\n        default: small\n"
    root = agent(tmp_path, GOOD, params=params)
    out = check_wrapper(load_package(root), root)
    assert out.cmd == ["agent", "--model", "small"]
    assert out.cwd.endswith("/work")


def test_the_local_exec_bit_is_not_needed(tmp_path: Path) -> None:
    """The registry marks wrappers executable, so the check runs a copy with the bit set, as installed."""
    root = agent(tmp_path, GOOD, mode=0o644)
    assert check_wrapper(load_package(root), root).cmd[0] == "agent"


def test_the_stub_agent_fixture_passes(capsys: pytest.CaptureFixture[str]) -> None:
    root = FIXTURES / "agents" / "stub-agent"
    assert main(["validate", "--run-wrapper", str(root)]) == 0
    out = capsys.readouterr().out
    assert "ok: agent stub-agent" in out
    assert "wrapper ok: bin/stub-wrapper build" in out


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("sys.stderr.write('boom: no model configured\\n'); sys.exit(3)",
         "`build` exited with status 3\nstderr (last 1 line):\n  boom: no model configured"),
        ("pass", "`build` printed nothing"),
        ("print('starting agent...')", "`build` output is not JSON"),
        ("print(json.dumps(['cmd', 'x']))", "`build` must print a JSON object, not a array"),
        ("print(json.dumps({'cwd': '/tmp'}))", "`build` output: missing key: cmd"),
        ("print(json.dumps({}))", "`build` output: missing key: cmd\n"),
        ("print(json.dumps({'cmd': 'agent --go', 'cwd': '/tmp'}))",
         "'cmd' must be a list of strings, a program first, got \"agent --go\""),
        ("print(json.dumps({'cmd': [], 'cwd': '/tmp'}))", "'cmd' must be a list of strings, a program first, got []"),
        ("print(json.dumps({'cmd': ['a', 1], 'cwd': '/tmp'}))", "'cmd' must be a list of strings, a program first, got [\"a\", 1]"),
        ("print(json.dumps({'cmd': ['a'], 'cwd': 7}))", "'cwd' must be a path string, got number 7"),
        ("print(json.dumps({'cmd': ['a'], 'cwd': None}))", "'cwd' must be a path string, got null null"),
        ("print(json.dumps({'cmd': 5}))", "`build` output: 'cmd' must be a list of strings, a program first, got 5"),
        ("print(json.dumps({'cmd': ['a'], 'env': {'LLM_MODEL': 5}}))",
         "`build` output: 'env' value of LLM_MODEL must be a string, got number 5"),
        ("print(json.dumps({'cmd': ['a'], 'env': {'LLM_MODEL': ['x']}}))",
         "`build` output: 'env' value of LLM_MODEL must be a string, got array [\"x\"]"),
        ("print(json.dumps({'cmd': ['a'], 'env': ['LLM_MODEL=x']}))",
         "`build` output: 'env' must be an object of string values, got array"),
        ("print(json.dumps({'cmd': ['a'], 'env': {'BIG': 'x' * 1024 * 1024}}))",
         "`build` output: 'env' value of BIG is 1048576 characters, more than the limit of 32768"),
    ],
)
def test_bad_wrappers_say_exactly_what_is_wrong(tmp_path: Path, script: str, expected: str) -> None:
    message = check(agent(tmp_path, script))
    assert message.startswith("wrapper bin/wrap: ")
    assert expected in message


def test_stderr_tail_is_shown_with_bad_output(tmp_path: Path) -> None:
    script = "\n".join(f"sys.stderr.write('line {i}\\n')" for i in range(40)) + "\nprint('nope')"
    message = check(agent(tmp_path, script))
    assert "not JSON" in message and "  nope" in message
    assert "line 39" in message and "line 24" not in message  # only the tail


def test_a_hanging_wrapper_times_out(tmp_path: Path) -> None:
    message = check(agent(tmp_path, "import time\ntime.sleep(30)"), timeout=1)
    assert "`build` did not finish within 1 s" in message


def test_a_wrapper_that_cannot_be_executed(tmp_path: Path) -> None:
    root = agent(tmp_path, "")
    (root / "bin" / "wrap").write_bytes(b"\x7fELF not really a binary")
    assert "cannot run it" in check(root)


def test_no_wrapper_for_this_os(tmp_path: Path) -> None:
    other = "windows" if current_os() != "windows" else "linux"
    root = tmp_path / "agent"
    (root / "bin").mkdir(parents=True)
    (root / "AGENT.md").write_text(
        f"---\nname: tiny\ndescription: d\nmetadata:\n  strawpot:\n    bin:\n      {other}: bin/w.exe\n---\n"
    )
    (root / "bin" / "w.exe").write_bytes(b"MZ")
    message = check(root)
    assert f"no wrapper for {current_os()} (metadata.strawpot.bin.{current_os()} is not set; declared: {other})" in message


def test_not_an_agent() -> None:
    root = FIXTURES / "skills" / "git-workflow"
    with pytest.raises(UsageError, match="checks an agent's wrapper; git-workflow is a skill"):
        check_wrapper(load_package(root), root)


def test_validate_cli_exit_code_and_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = agent(tmp_path, "print(json.dumps({'cmd': ['a'], 'cwd': '/no/such/dir'}))")
    assert main(["validate", "--run-wrapper", str(root)]) == 2
    err = capsys.readouterr().err
    assert "error: wrapper bin/wrap: `build` output: 'cwd' '/no/such/dir' is not a directory" in err
    assert "Traceback" not in err
    shown = err.split("is not a directory\n", 1)[1].split("\n")[0].strip()
    assert json.loads(shown) == {"cmd": ["a"], "cwd": "/no/such/dir"}


def test_validate_accepts_what_start_runs(tmp_path: Path) -> None:
    """One contract: `cwd` may be left out (the runtime runs the command in the working dir)."""
    root = agent(tmp_path, "print(json.dumps({'cmd': ['a']}))")
    out = check_wrapper(load_package(root), root)
    assert out.cmd == ["a"] and out.cwd.endswith("/work")


def test_the_check_passes_files_dir_and_reports_the_env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same contract as `start`: `--files-dir` given (an existing folder), `env` string values accepted."""
    script = ("files = [args[i + 1] for i, a in enumerate(args) if a == '--files-dir']\n"
              "import os\n"
              "assert len(files) == 1 and os.path.isdir(files[0]), args\n"
              "print(json.dumps({'cmd': ['agent'], 'env': {'LLM_MODEL': 'm-1', 'TTY_INTERACTIVE': '1'}}))")
    root = agent(tmp_path, script)
    assert check_wrapper(load_package(root), root).env == {"LLM_MODEL": "m-1", "TTY_INTERACTIVE": "1"}
    assert main(["validate", "--run-wrapper", str(root)]) == 0
    assert ", env LLM_MODEL, TTY_INTERACTIVE" in capsys.readouterr().out
