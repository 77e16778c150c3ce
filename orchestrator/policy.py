"""Delegation rules as pure functions: role allow-list, depth limit and delegation budget."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from orchestrator.outcome import DENY_BUDGET_EXCEEDED, DENY_DEPTH_LIMIT, DENY_ROLE_NOT_ALLOWED
from strawpot.model.settings import SCHEMA, Settings

_KEYS = ("max_depth", "max_delegations", "agent_timeout", "kill_grace")
DEFAULT_MAX_DEPTH: int = SCHEMA["policy.max_depth"].default
DEFAULT_AGENT_TIMEOUT: float = SCHEMA["policy.agent_timeout"].default
DEFAULT_MAX_DELEGATIONS: int = SCHEMA["policy.max_delegations"].default
DEFAULT_KILL_GRACE: float = SCHEMA["policy.kill_grace"].default


@dataclass(frozen=True)
class Policy:
    """The `[policy]` table: how deep, how many and how long delegations may go."""

    max_depth: int = DEFAULT_MAX_DEPTH  # the orchestrator is depth 0; its sub-agents depth 1, ...
    max_delegations: int = DEFAULT_MAX_DELEGATIONS  # per run, counting every accepted delegation
    agent_timeout: float = DEFAULT_AGENT_TIMEOUT  # seconds a delegated agent may run
    kill_grace: float = DEFAULT_KILL_GRACE  # seconds between SIGTERM and SIGKILL

    @classmethod
    def from_settings(cls, settings: Settings) -> Policy:
        """The `policy.*` settings (typed and range-checked by the settings layer)."""
        return cls(**{name: settings.get(f"policy.{name}") for name in _KEYS})


@dataclass(frozen=True)
class Denial:
    code: str
    message: str


@dataclass(frozen=True)
class Delegator:
    """What policy needs to know about the agent asking to delegate."""

    agent_id: str
    role: str
    depth: int
    allowed_roles: frozenset[str]  # roles declared in its ROLE.md (dependencies.roles)
    wildcard: bool = False  # declared roles: ["*"]


def check_delegation(
    policy: Policy, caller: Delegator, target: str, *, installed_roles: Collection[str], delegations_so_far: int
) -> Denial | None:
    """None when `caller` may delegate to role `target`, else the first rule it breaks."""
    if target not in installed_roles:
        return Denial(DENY_ROLE_NOT_ALLOWED, f"role {target!r} is not installed in this project (see strawpot.lock)")
    if not caller.wildcard and target not in caller.allowed_roles:
        allowed = ", ".join(sorted(caller.allowed_roles)) or "none"
        return Denial(
            DENY_ROLE_NOT_ALLOWED,
            f"role {caller.role!r} may not delegate to {target!r}; its declared roles are: {allowed}",
        )
    if caller.depth + 1 > policy.max_depth:
        return Denial(
            DENY_DEPTH_LIMIT,
            f"delegation depth limit reached: {caller.agent_id} is at depth {caller.depth} and "
            f"policy.max_depth is {policy.max_depth}; do the task yourself",
        )
    if delegations_so_far >= policy.max_delegations:
        return Denial(
            DENY_BUDGET_EXCEEDED,
            f"delegation budget of this run is spent ({policy.max_delegations} delegations, policy.max_delegations)",
        )
    return None
