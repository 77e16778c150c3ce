"""Interactive runs under real tmux: start in a tmux session, detach, re-attach, end; env asked for on a terminal.

The test drives a terminal of its own (a tmux server on a private socket) with send-keys and reads it with
capture-pane, exactly as a user would type and look.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import STRAWPOT
from tests.orchestrator._agents import typed_agent

pytestmark = pytest.mark.e2e
COMMAND = shlex.join(STRAWPOT)  # typed into a terminal


class Terminal:
    """A tmux server of the test's own: windows run shell commands, keys are sent, screens are read."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.socket = f"strawpot-test-{secrets.token_hex(4)}"
        self.cwd = cwd
        self.env = env
        self.windows = 0

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in self.env.items() if k not in ("TMUX", "TMUX_PANE")}
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=env, timeout=30)

    def open(self, command: str) -> str:
        """Run `command` in a new window (the shell stays a while after it, to read its last words)."""
        script = f"{command}; echo EXIT=$?; sleep 60"
        if self.windows == 0:
            proc = self.tmux("new-session", "-d", "-s", "t", "-x", "160", "-y", "45", "-c", str(self.cwd), script)
        else:
            # name the new window's index: `-t t` means the session's current window, and tmux may then pick
            # an index that is in use ("create window failed: index 1 in use")
            proc = self.tmux("new-window", "-d", "-t", f"t:{self.windows}", "-c", str(self.cwd), script)
        assert proc.returncode == 0, proc.stderr
        target = f"t:{self.windows}"
        self.windows += 1
        return target

    def screen(self, target: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", target).stdout

    def keys(self, target: str, *keys: str) -> None:
        assert self.tmux("send-keys", "-t", target, *keys).returncode == 0

    def wait_for(self, target: str, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen(target)
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; the screen shows:\n{self.screen(target)}")

    def close(self) -> None:
        self.tmux("kill-server")
        _forget_socket(self.socket)


def _forget_socket(name: str) -> None:
    """tmux 3.3 leaves a dead server's socket file behind."""
    (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)


@pytest.fixture
def terminal(project, tmp_path: Path) -> Iterator[Terminal]:  # type: ignore[no-untyped-def]
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: `bash scripts/bootstrap.sh --test-tools` installs it")
    config = tmp_path / "config"
    config.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "STUB_TOKEN"}
    term = Terminal(project.root, {**env, "STRAWPOT_CONFIG_DIR": str(config), "TERM": "xterm"})
    yield term
    term.close()
    for run_dir in project.sessions_dir.glob("run_*"):  # a run's own server, if a failing test left one
        subprocess.run(["tmux", "-L", f"strawpot-{run_dir.name}", "kill-server"], capture_output=True, timeout=30)
        _forget_socket(f"strawpot-{run_dir.name}")


def _session(project) -> dict:  # type: ignore[no-untyped-def]
    [path] = list(project.sessions_dir.glob("run_*/session.json"))
    return json.loads(path.read_text())


def _run_alive(run_id: str) -> bool:
    name = f"strawpot-{run_id}"
    return subprocess.run(["tmux", "-L", name, "has-session", "-t", name], capture_output=True, timeout=30).returncode == 0


def test_start_in_tmux_detach_reattach_and_end(project, terminal, pid_alive, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    first = terminal.open(f"{COMMAND} start")
    # the run's own start asks for the missing variable on the session's terminal
    terminal.wait_for(first, "STUB_TOKEN (input hidden, empty to skip):")
    terminal.keys(first, "typed-in-tmux", "Enter")
    terminal.wait_for(first, "for next time? [y/N]")
    terminal.keys(first, "n", "Enter")
    terminal.wait_for(first, "stub-agent>")
    run = _session(project)
    run_id = run["run_id"]
    assert run["tmux"] == f"strawpot-{run_id}" and _run_alive(run_id)
    assert not (Path(terminal.env["STRAWPOT_CONFIG_DIR"]) / "config.toml").exists()

    terminal.keys(first, "env:STUB_TOKEN then delegate:reviewer:echo:from-a-sub-agent", "Enter")
    terminal.wait_for(first, "from-a-sub-agent")
    assert terminal.screen(first).count("typed-in-tmux") == 1  # the agent's answer, never the hidden input
    terminal.keys(first, "C-b", "d")  # the run's tmux prefix: detach
    screen = terminal.wait_for(first, "EXIT=0")
    assert f"detached from run {run_id}; it keeps running" in screen
    assert f"re-attach: strawpot attach {run_id}" in screen
    detached = _session(project)
    root = next(a for a in detached["agents"] if a["parent"] is None)
    assert detached["state"] == "running" and pid_alive(root["pid"]) and pid_alive(detached["owner_pid"])

    second = terminal.open(f"{COMMAND} attach {run_id}")
    screen = terminal.wait_for(second, "from-a-sub-agent")  # the same session, its history intact
    terminal.keys(second, "exit", "Enter")
    screen = terminal.wait_for(second, "EXIT=0")
    assert f"run {run_id} succeeded (exit code 0)" in screen
    ended = _session(project)
    assert ended["state"] == "succeeded" and {a["state"] for a in ended["agents"]} == {"succeeded"}
    assert not pid_alive(root["pid"]) and not pid_alive(ended["owner_pid"])
    assert not _run_alive(run_id)
    late = terminal.open(f"{COMMAND} attach {run_id}")
    assert "has ended (succeeded, exit code 0)" in terminal.wait_for(late, "EXIT=2")


def test_a_terminal_is_asked_for_missing_env_and_may_save_it(project, terminal, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build(typed_agent(tmp_path))
    window = terminal.open(f"{COMMAND} start --attach direct --task env:STUB_TOKEN")
    terminal.wait_for(window, "STUB_TOKEN (input hidden, empty to skip):")
    assert "Token the stub agent pretends to need" in terminal.screen(window)
    terminal.keys(window, "s3cret-value", "Enter")
    terminal.wait_for(window, "for next time? [y/N]")
    terminal.keys(window, "y", "Enter")
    screen = terminal.wait_for(window, "EXIT=0")
    assert screen.count("s3cret-value") == 1  # the agent's result; the typed input was never echoed
    config = Path(terminal.env["STRAWPOT_CONFIG_DIR"]) / "config.toml"
    assert config.read_text() == '[agents.stub-agent.env]\nSTUB_TOKEN = "s3cret-value"\n'
    assert stat.S_IMODE(config.stat().st_mode) == 0o600

    again = terminal.open(f"{COMMAND} start --attach direct --task env:STUB_TOKEN")  # saved: not asked again
    screen = terminal.wait_for(again, "EXIT=0")
    assert "input hidden" not in screen and "s3cret-value" in screen


def test_attach_tmux_with_a_task_runs_it_in_a_session_to_its_end(project, terminal) -> None:  # type: ignore[no-untyped-def]
    project.build()
    window = terminal.open(f"{COMMAND} start --attach tmux --task 'echo:in-tmux then fail:3'")
    screen = terminal.wait_for(window, "EXIT=3")
    run = _session(project)
    assert f"run {run['run_id']} failed (exit code 3)" in screen
    assert run["tmux"] == f"strawpot-{run['run_id']}" and not _run_alive(run["run_id"])
