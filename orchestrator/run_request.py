"""One run a runner is asked to start (orchestrator/runners.py): what `start` verified and was given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.ask import Asker
from orchestrator.launch import Prepared
from strawpot.model.child_env import EnvPolicy
from strawpot.model.settings import Settings


@dataclass
class RunRequest:
    """One run to start: what `start` verified and was given, and where its progress goes."""

    prepared: Prepared
    settings: Settings
    task: str
    run_id: str
    asker: Asker
    params: Mapping[str, str] = field(default_factory=dict)  # `--param` values, for a remote `start`
    cli_agent: str | None = None  # `--runtime`
    observer: Callable[[str, dict[str, Any]], None] | None = None
    warn: Callable[[str], None] | None = None
    env_policy: EnvPolicy | None = None
    tmux: str = ""
    attach: bool = False
