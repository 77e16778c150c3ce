"""`strawpot doctor` names what to do for every failing check, a tool with no install command for this OS too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests._cli import strawpot_here
from tests.orchestrator.conftest import STUB_AGENT, ProjectFixture, standard_roles, standard_skills

ABSENT = "strawpot-test-absent-tool"


def agent_with_tools(tmp_path: Path, tools: str) -> Path:
    """The stub agent declaring extra `tools` (YAML under metadata.strawpot.tools, indented 6)."""
    target = tmp_path / "tooled-agent"
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    md = target / "AGENT.md"
    md.write_text(md.read_text(encoding="utf-8").replace("    tools:\n", "    tools:\n" + tools, 1), encoding="utf-8")
    return target


def project(tmp_path: Path, tools: str) -> ProjectFixture:
    root = tmp_path / "proj"
    root.mkdir()
    return ProjectFixture(root, standard_roles(), standard_skills()).build(agent_with_tools(tmp_path, tools))


def doctor(fixture: ProjectFixture, tmp_path: Path, *args: str) -> tuple[int, str]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    done = strawpot_here("doctor", *args, cwd=fixture.root, extra_env={"STRAWPOT_CONFIG_DIR": str(config)})
    return done.returncode, done.stdout


def test_a_tool_with_no_install_command_here_still_gets_a_fix_line(tmp_path: Path) -> None:
    fixture = project(tmp_path, f"      {ABSENT}:\n        description: A tool nobody has\n"
                                "        install:\n          windows: choco install nothing\n")
    code, text = doctor(fixture, tmp_path)
    assert code == 7, text
    lines = text.splitlines()
    problems = [i for i, line in enumerate(lines) if line.strip().startswith("problem:")]
    assert problems, text
    for i in problems:
        assert lines[i + 1].strip().startswith("fix:"), f"no fix for {lines[i]!r}:\n{text}"
    [at] = [i for i in problems if ABSENT in lines[i]]
    fix = lines[at + 1]
    assert f"install `{ABSENT}` by hand" in fix and "strawpot info agent stub-agent" in fix, fix
    assert "docs/sessions.md" in fix, fix

    code, out = doctor(fixture, tmp_path, "--json")
    assert code == 7
    [report] = json.loads(out)["agents"]
    assert [p["fix"] for p in report["problems"] if not p["fix"]] == []

