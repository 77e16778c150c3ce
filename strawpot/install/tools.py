"""System tools that installed agents need: find the missing ones, and run their install hints on request."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from strawpot.install.trust import TrustPolicy
from strawpot.model.child_env import EnvPolicy, child_env
from strawpot.model.ids import package_id
from strawpot.model.kinds import Kind
from strawpot.model.lockfile import LockedFile, Lockfile
from strawpot.model.platform import current_os

HINT_TIMEOUT = 600.0


@dataclass(frozen=True)
class MissingTool:
    """A tool an agent needs that is not on PATH, with the install command its AGENT.md gives."""

    agent: str
    tool: str
    description: str
    hint: str | None  # the install command for this OS, if the agent gives one
    foreign: bool = False  # the hint in strawpot.lock is not the one the agent's own AGENT.md gives: never run

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


@dataclass
class HintRun:
    """What became of the missing tools' install hints: the tools still missing, whether any hint ran, warnings."""

    missing: list[MissingTool]
    ran: bool = False
    warnings: list[str] = field(default_factory=list)


def install_missing(
    missing: list[MissingTool], tree_root: Path, trust: TrustPolicy, lock: Lockfile, *, run: bool,
    ask: Callable[[MissingTool], bool], echo: Callable[[str], None], env_policy: EnvPolicy | None = None,
) -> HintRun:
    """Run the hints that may run: the agent's own (its installed AGENT.md gives that exact command), trusted
    for that exact text with the agent's locked files, and asked for (`--install-tools`), or the user says yes at
    the prompt (which trusts it)."""
    runnable: list[MissingTool] = []
    result = HintRun([])
    for item in missing:
        pid = package_id(Kind.AGENT, item.agent)
        if item.hint is None or item.hint not in own_hints(tree_root, item.agent, item.tool):
            if item.hint is not None:
                result.warnings.append(
                    f"the install command of tool {item.tool} in strawpot.lock is not the one agent {item.agent} "
                    "gives in its AGENT.md; not run (`strawpot verify` shows the difference)")
                item = replace(item, foreign=True)
            result.missing.append(item)
        elif (run and trust.verdict(pid, item.hint, *_locked(lock, item.agent)) is None) or ask(item):
            trust.grant(pid, [item.hint], *_locked(lock, item.agent))
            runnable.append(item)
        else:
            if run:
                result.warnings.append(f"the install command of tool {item.tool} was not run: agent {item.agent} is "
                                       f"not trusted for it; review it, then run `strawpot trust {pid}`")
            result.missing.append(item)
    if runnable:
        result.missing += run_hints(runnable, echo=echo, env_policy=env_policy)
        result.ran = True
    return result


def _locked(lock: Lockfile, agent: str) -> tuple[tuple[LockedFile, ...], str]:
    """The files and version strawpot.lock gives `agent`, which its tool hints are trusted with."""
    pkg = lock.get(Kind.AGENT, agent)
    return (pkg.files, pkg.version) if pkg is not None else ((), "")


def own_hints(tree_root: Path, agent: str, tool: str) -> set[str]:
    """The install commands (every OS) the installed agent's own AGENT.md gives for `tool`."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.fs import as_text, read_regular_file
    from strawpot.model.package_fields import tool_specs
    from strawpot.model.package_limits import MAX_FILE_SIZE

    data, _, unreadable = read_regular_file(tree_root / Kind.AGENT.plural / agent / Kind.AGENT.main_file, MAX_FILE_SIZE)
    if unreadable:
        return set()
    try:
        meta, _body = split_frontmatter(as_text(data))
    except (UnicodeDecodeError, FrontmatterError):
        return set()
    return set(tool_specs(meta).get(tool, {}).values())
