"""Every command answers --help, and every command with --json prints one document of the one shape
(docs/json.md), on success and on failure."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import rich_click as click

from strawpot.cli_group import cli
from tests._cli import in_process, strawpot, strawpot_here

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def all_commands() -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []
    ctx = click.Context(cli)

    def walk(group: Any, path: list[str]) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            found.append(([*path, name], command))
            if isinstance(command, click.Group):
                walk(command, [*path, name])

    walk(cli, [])
    return found


# Commands that start or reach a run (agents, signals, a terminal) run as a real subprocess; the rest in-process.
PROCESS_COMMANDS = {"start", "resume", "attach", "chat", "cancel", "agents"}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRAWPOT_", "STRAWHUB_"))}
    env.update(HOME=str(cwd), STRAWPOT_CONFIG_DIR=str(cwd / ".config"), STRAWPOT_CACHE_DIR=str(cwd / ".cache"),
               STRAWPOT_HOME=str(cwd / ".global"), STRAWPOT_REGISTRY_URL="http://127.0.0.1:9", NO_COLOR="1",
               STRAWPOT_HTTP_TIMEOUT="2")
    if args[0] in PROCESS_COMMANDS:
        return strawpot(*args, cwd=cwd, env=env, timeout=60)
    return strawpot_here(*args, cwd=cwd, env=env)


def check_shape(document: dict[str, Any], command: str) -> None:
    assert document["schema_version"] == 2
    assert document["command"] == command or document["command"].startswith(f"{command} "), document["command"]

    def keys(value: Any, verbatim: bool = False) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                assert verbatim or not re.search(r"[a-z][A-Z]", str(key)), f"camelCase key {key!r} in {command}"
                keys(inner, verbatim or key in {"params", "env", "tools", "install", "metadata", "dependencies",
                                                "settings", "inputs", "value", "trusted"})
        elif isinstance(value, list):
            for inner in value:
                keys(inner, verbatim)

    keys(document)
    if "error" in document:
        assert set(document["error"]) >= {"code", "exit_code", "message"}


def test_every_command_answers_help(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # In this process (a subprocess each was 80 interpreter start-ups, the suite's slowest test); the program's own
    # --help, through a real `strawpot`, stays below.
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)
    commands = all_commands()
    assert len(commands) > 30
    for path, _command in commands:
        code, out, err = in_process(capsys, *path, "--help")
        assert code == 0, (path, err)
        assert "Usage:" in out, path
    result = strawpot("--help", cwd=tmp_path, extra_env={"COLUMNS": "120"}, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


# Arguments that make each --json command do its work (or fail the way a user would see first) in an empty folder.
ARGS: dict[str, list[str]] = {
    "info": ["skill", "alpha"], "search": ["alpha"], "why": ["skill", "alpha"], "validate": [str(FIXTURES / "skills" / "code-style")],
    "publish": [str(FIXTURES / "skills" / "code-style"), "--dry-run"], "yank": ["skill", "alpha", "1.0.0"],
    "agents": ["run-x"], "cancel": ["run-x"], "sessions show": ["run-x"], "memory remember": ["a fact"],
    "memory recall": ["fact"], "memory forget": ["x"], "install": ["--dry-run"], "trust": ["skill:alpha"],
    "start": ["--headless", "--task", "echo:x"], "config set": ["registry.url", "http://127.0.0.1:9"],
    "resume": ["run-x"], "attach": ["run-x"], "setup": ["stub-agent"], "chat": ["--list"],
}


def json_commands() -> list[str]:
    return [" ".join(path) for path, command in all_commands()
            if any("--json" in getattr(p, "opts", []) for p in command.params)]


@pytest.mark.parametrize("command", json_commands())
def test_every_json_command_prints_one_document_of_the_one_shape(tmp_path: Path, command: str) -> None:
    result = run(*command.split(), *ARGS.get(command, []), "--json", cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    document = json.loads(result.stdout)
    check_shape(document, command)
    assert ("error" in document) is (result.returncode != 0), result.stdout + result.stderr
    if "error" in document:
        assert document["error"]["exit_code"] == result.returncode


# Where the --json payloads are built: the commands and the reports they print (install, publishing).
PAYLOAD_BUILDERS = ("strawpot/commands", "strawpot/install", "strawpot/publishing", "orchestrator")


def test_every_payload_is_built_with_snake_case_keys() -> None:
    """No key is renamed on the way out (docs/json.md), so each literal key a report is built with is snake_case."""
    import ast

    root = Path(__file__).resolve().parents[2]
    found = [f"{path.relative_to(root)}:{key.lineno}: {key.value!r}"
             for folder in PAYLOAD_BUILDERS for path in sorted((root / folder).rglob("*.py"))
             if "_proto" not in path.parts
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Dict)
             for key in node.keys
             if isinstance(key, ast.Constant) and isinstance(key.value, str) and re.search(r"[a-z][A-Z]", key.value)]
    assert found == []
