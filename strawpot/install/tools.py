"""System tools that installed agents need: find the missing ones, and run their install hints on request."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from strawpot.model.child_env import EnvPolicy, child_env
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import Lockfile
from strawpot.model.platform import current_os

HINT_TIMEOUT = 600.0


@dataclass(frozen=True)
class MissingTool:
    agent: str
    tool: str
    description: str
    hint: str | None  # the install command for this OS, if the agent gives one

    def as_dict(self) -> dict[str, str | None]:
        return {"agent": self.agent, "tool": self.tool, "description": self.description, "install": self.hint}


def missing_tools(lock: Lockfile) -> list[MissingTool]:
    """Every tool a locked agent declares that is not on PATH."""
    os_name = current_os()
    missing = []
    for pkg in lock.packages:
        if pkg.kind is not Kind.AGENT:
            continue
        for tool in pkg.tools:
            if shutil.which(tool.name) is None:
                missing.append(MissingTool(pkg.name, tool.name, tool.description, tool.install.get(os_name)))
    return missing


def run_hints(
    missing: list[MissingTool], *, echo: Callable[[str], None], timeout: float = HINT_TIMEOUT,
    env_policy: EnvPolicy | None = None,
) -> list[MissingTool]:
    """Run each install hint in turn (echoed first); return the tools still missing afterwards."""
    still = []
    done: set[str] = set()
    for item in missing:
        if item.hint and item.hint not in done:
            done.add(item.hint)
            echo(f"$ {item.hint}")
            try:
                subprocess.run(item.hint, shell=True, check=False, timeout=timeout,  # noqa: S602 - trusted, on request
                               env=child_env(os.environ, env_policy))
            except subprocess.TimeoutExpired:
                echo(f"timed out after {timeout:.0f} s: {item.hint}")
        if shutil.which(item.tool) is None:
            still.append(item)
    return still
