"""What a bubblewrap sandbox refused an agent shows in the human output of `strawpot start` (inert, each refusal
once however often the agent retries) and stays in the run's record for `strawpot sessions show`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests._cli import strawpot
from tests.orchestrator.conftest import ProjectFixture, standard_roles, standard_skills
from tests.orchestrator.test_tmux_sessions import COMMAND, Terminal

DENIED = "/usr/strawpot-denied.txt"  # read-only inside the sandbox
# the agent retries the same refused write in a loop, and prints a line with an escape sequence in it
LOOP = " then ".join([f"try:write:{DENIED}=x"] * 8)
TASK = f"{LOOP} then echo:\x1b[2J\x1b]0;owned\x07Permission denied here then echo:done"


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "proj"
    root.mkdir()
    ProjectFixture(root, standard_roles(), standard_skills(), policy={"agent_timeout": 30}).build()
    env = {"HOME": str(tmp_path / "home"), "STRAWPOT_CONFIG_DIR": str(tmp_path / "config"), "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    (tmp_path / "home").mkdir()
    return root, env


def test_start_says_each_refusal_once_inert_and_sessions_show_keeps_them(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    ran = strawpot("start", "--headless", "--sandbox", "bwrap", "--task", TASK, cwd=root, extra_env=env)
    assert ran.returncode == 0, ran.stderr
    assert not Path(DENIED).exists()
    said = [line for line in ran.stderr.splitlines() if line.startswith("sandbox denied ")]
    assert "\x1b" not in ran.stderr and "\x07" not in ran.stderr, repr(ran.stderr)
    refused = [line for line in said if "Read-only file system" in line]
    assert len(refused) == 1 and DENIED in refused[0], ran.stderr  # eight tries, one line
    assert any(line.endswith("Permission denied here") for line in said), ran.stderr
    agent = refused[0].removeprefix("sandbox denied ").split(":", 1)[0]
    assert agent.startswith("orchestrator-"), refused[0]

    [run_id] = [p.name for p in (root / ".strawpot" / "sessions").iterdir()]
    record = json.loads(strawpot("sessions", "show", run_id, "--json", cwd=root, extra_env=env).stdout)
    [kept] = [a["sandbox_denied"] for a in record["agents"] if a["agent_id"] == agent]
    assert len([line for line in kept if "Read-only file system" in line]) == 1, kept
    shown = strawpot("sessions", "show", run_id, cwd=root, extra_env=env).stdout
    assert f"sandbox denied: {refused[0].split(': ', 1)[1]}" in [line.strip() for line in shown.splitlines()], shown
    assert "\x1b" not in shown


def test_start_unsandboxed_says_no_refusal(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    ran = strawpot("start", "--headless", "--task", "echo:Permission denied, but no sandbox", cwd=root,
                   extra_env=env)
    assert ran.returncode == 0 and "sandbox denied" not in ran.stderr, ran.stderr


def test_attach_says_the_refusals_once_the_run_in_tmux_ends(tmp_path: Path) -> None:
    """`start --attach tmux` attaches as `strawpot attach` does: the tmux window that showed the run's lines is gone
    when it ends, so what the sandbox refused is said again on the terminal attached to it."""
    root, env = _project(tmp_path)
    terminal = Terminal(root, {**os.environ, **env, "TERM": "xterm"})
    try:
        window = terminal.open(f"{COMMAND} start --attach tmux --sandbox bwrap --task {shlex.quote(TASK)}")
        screen = terminal.wait_for(window, "EXIT=", timeout=60)
    finally:
        terminal.close()
        for run_dir in (root / ".strawpot" / "sessions").glob("run_*"):
            subprocess.run(["tmux", "-L", f"strawpot-{run_dir.name}", "kill-server"], capture_output=True,
                           timeout=30)
    assert "EXIT=0" in screen, screen
    refused = [line for line in screen.splitlines() if line.startswith("sandbox denied orchestrator-")
               and "Read-only file system" in line]
    assert len(refused) == 1, screen
    assert screen.index(refused[0]) < screen.index(" succeeded (exit code 0)"), screen
