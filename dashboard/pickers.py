"""The start form's role and runtime pickers: the roles and agents the project's lock holds, and what each
default (an empty choice: `strawpot start` decides) stands for."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.binding import choose_agent
from strawpot.model.errors import StrawpotError
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest
from strawpot.model.settings import Settings


@dataclass(frozen=True)
class Pickers:
    """`roles`: each locked role with the agent it is bound to ("" if none); `agents`: the locked agents."""

    roles: list[tuple[str, str]] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    default_role: str = ""  # `[orchestrator].role`, what `start` runs without `--role`
    problem: str = ""  # why the lock or the settings could not be read (the pickers then hold the default only)

    @property
    def default_agent(self) -> str:
        """The agent the default role is bound to ("" when there is none)."""
        return dict(self.roles).get(self.default_role, "")


def pickers(project_dir: Path, settings: Settings) -> Pickers:
    """The pickers of the project in `project_dir`, its settings `settings`; bound as `start` binds them (the
    `STRAWPOT_AGENT_<ROLE>` of the UI's environment counts: the start inherits it)."""
    layout = Project(project_dir)
    try:
        lock = Lockfile.load(layout.lock_path)
        manifest = Manifest.load(layout.manifest_path)
    except StrawpotError as exc:
        return Pickers(default_role=_text(settings.get("orchestrator.role")), problem=exc.message)
    runtime = _text(settings.get("orchestrator.runtime")) or None
    roles = []
    for p in lock.packages:
        if p.kind is Kind.ROLE:
            bound = choose_agent(p.name, cli=None, environ=os.environ, manifest_default=manifest.role_default_agent(p.name),
                                 role_default=p.default_agent, runtime=runtime)
            roles.append((p.name, bound.agent if bound else ""))
    agents = [p.name for p in lock.packages if p.kind is Kind.AGENT]
    return Pickers(roles, agents, _text(settings.get("orchestrator.role")))


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
