"""`strawpot install` offers `--install-tools` only when it would install something: a missing tool whose agent
gives an install command for this OS."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from strawpot.model.lockfile import LockedTool, Lockfile
from strawpot.model.platform import current_os
from tests._cli import strawpot_here
from tests._live_registry import LiveRegistry, start_registry
from tests.install.conftest import Registry
from tests.orchestrator.conftest import STUB_AGENT

ABSENT = "strawpot-test-absent-tool"


def agent(work: Path, slug: str, install: str) -> Path:
    """The stub agent renamed `slug`, declaring tool ABSENT with `install` (YAML lines, indented 10)."""
    target = work / slug
    shutil.copytree(STUB_AGENT, target, ignore=shutil.ignore_patterns("__pycache__"))
    md = target / "AGENT.md"
    text = md.read_text(encoding="utf-8").replace("name: stub-agent", f"name: {slug}", 1)
    md.write_text(text.replace("    tools:\n", f"    tools:\n      {ABSENT}:\n        description: nobody has it\n"
                                               f"        install:\n{install}", 1), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    work = tmp_path_factory.mktemp("tools-hint")
    with start_registry(work / "data") as live:
        reg = Registry(live, work)
        elsewhere = "windows" if current_os() != "windows" else "linux"
        reg.publish_folder(agent(work, "no-command-here", f"          {elsewhere}: ./get-it\n"))
        reg.publish_folder(agent(work, "has-command-here", f"          {current_os()}: echo install {ABSENT}\n"))
        yield live


def install(registry: LiveRegistry, tmp_path: Path, *args: str) -> str:
    (tmp_path / "proj").mkdir(exist_ok=True)
    done = strawpot_here("install", *args, cwd=tmp_path / "proj",
                         extra_env={"STRAWPOT_REGISTRY_URL": registry.url, "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"),
                                    "STRAWPOT_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1", "COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_no_install_tools_hint_when_no_missing_tool_has_a_command(registry: LiveRegistry, tmp_path: Path) -> None:
    err = install(registry, tmp_path, "agent", "no-command-here")
    assert f"needs `{ABSENT}`, which is not on PATH; no install command is given for this OS" in err, err
    assert "--install-tools" not in err, err


def test_the_hint_shows_when_a_missing_tool_has_a_command(registry: LiveRegistry, tmp_path: Path) -> None:
    err = install(registry, tmp_path, "agent", "has-command-here")
    assert f"install it with: echo install {ABSENT}" in err and "rerun with --install-tools" in err, err


def test_no_hint_for_a_command_edited_into_the_lock(registry: LiveRegistry, tmp_path: Path) -> None:
    """--install-tools never runs a command the agent's own AGENT.md does not give, so it is not offered for one."""
    install(registry, tmp_path, "agent", "has-command-here")
    lock_path = tmp_path / "proj" / "strawpot.lock"
    lock = Lockfile.load(lock_path)
    forged = tuple(type(p)(**{**p.__dict__, "tools": tuple(
        LockedTool(t.name, t.description, {current_os(): "touch forged"}) for t in p.tools)}) for p in lock.packages)
    Lockfile(forged, lock.manifest_hash, lock.generated_by, trust=lock.trust).write(lock_path)
    err = install(registry, tmp_path, "--frozen")
    assert f"the install command of tool {ABSENT} in strawpot.lock is not the one agent has-command-here" in err, err
    assert "touch forged" not in err and "--install-tools" not in err, err
