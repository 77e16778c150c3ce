"""Helpers for command tests that start real runs: start one, start one in the background, wait for its agents."""

from __future__ import annotations

import json
import subprocess
import time

from tests._cli import STRAWPOT, strawpot


def start(project, task: str, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """`strawpot start --headless --task TASK` in the project, waited for."""
    return strawpot("start", "--headless", "--task", task, *extra, cwd=project.root, env=env, timeout=60)


def start_in_background(project, task: str, env: dict[str, str]) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    """The same run, not waited for: the test cancels or interrupts it."""
    return subprocess.Popen([*STRAWPOT, "start", "--headless", "--task", task], cwd=project.root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def only_run_id(project) -> str:  # type: ignore[no-untyped-def]
    [run_dir] = list(project.sessions_dir.iterdir())
    return run_dir.name


def running(project, count: int, timeout: float = 60) -> tuple[str, list[dict]]:  # type: ignore[no-untyped-def]
    """The run id and its running agents once `count` of them run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in project.sessions_dir.glob("*/session.json"):
            try:
                data = json.loads(path.read_text())
            except (json.JSONDecodeError, FileNotFoundError):
                continue
            agents = [a for a in data["agents"] if a["state"] == "running"]
            if len(agents) >= count:
                return data["run_id"], agents
        time.sleep(0.05)
    raise AssertionError(f"{count} agents never ran")
