"""Delegation rules as pure functions: role allow-list, depth limit and delegation budget."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.outcome import DENY_BUDGET_EXCEEDED, DENY_DEPTH_LIMIT, DENY_ROLE_NOT_ALLOWED

DEFAULT_MAX_DEPTH = 3
DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_MAX_DELEGATIONS = 100
DEFAULT_KILL_GRACE = 3.0


@dataclass(frozen=True)
class Policy:
    """The `[policy]` table: how deep, how many and how long delegations may go."""

    max_depth: int = DEFAULT_MAX_DEPTH  # the orchestrator is depth 0; its sub-agents depth 1, ...
    max_delegations: int = DEFAULT_MAX_DELEGATIONS  # per run, counting every accepted delegation
    agent_timeout: float = DEFAULT_AGENT_TIMEOUT  # seconds a delegated agent may run
    kill_grace: float = DEFAULT_KILL_GRACE  # seconds between SIGTERM and SIGKILL

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Policy:
        """Read `[policy]`; raise ValueError naming every bad key."""
        problems: list[str] = []
        values: dict[str, Any] = {}
        for key, kind, minimum in (
            ("max_depth", int, 0), ("max_delegations", int, 0),
            ("agent_timeout", float, 0.001), ("kill_grace", float, 0.0),
        ):
            if key not in settings:
                continue
            raw = settings[key]
            if isinstance(raw, bool) or not isinstance(raw, int | float) or (kind is int and not isinstance(raw, int)):
                problems.append(f"policy.{key} must be a {'whole ' if kind is int else ''}number, not {raw!r}")
            elif raw < minimum:
                problems.append(f"policy.{key} must be at least {minimum}, not {raw!r}")
            else:
                values[key] = kind(raw)
        if problems:
            raise ValueError("; ".join(problems))
        return cls(**values)


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
