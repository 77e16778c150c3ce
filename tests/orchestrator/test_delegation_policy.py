"""Delegation policy as tables: allow-list, wildcard, depth limit, budget; and reading [policy]."""

from __future__ import annotations

import pytest

from orchestrator.outcome import DENY_BUDGET_EXCEEDED, DENY_DEPTH_LIMIT, DENY_ROLE_NOT_ALLOWED
from orchestrator.policy import Delegator, Policy, check_delegation

INSTALLED = {"orchestrator", "implementer", "reviewer", "lead"}


def caller(depth: int = 0, allowed: set[str] | None = None, wildcard: bool = False) -> Delegator:
    return Delegator("a-1", "orchestrator", depth, frozenset(allowed or {"implementer"}), wildcard)


@pytest.mark.parametrize(
    ("who", "target", "policy", "used", "expected"),
    [
        (caller(), "implementer", Policy(), 0, None),
        (caller(), "reviewer", Policy(), 0, DENY_ROLE_NOT_ALLOWED),  # installed but not declared
        (caller(), "ghost", Policy(), 0, DENY_ROLE_NOT_ALLOWED),  # not installed at all
        (caller(wildcard=True), "reviewer", Policy(), 0, None),  # roles: ["*"]
        (caller(wildcard=True), "ghost", Policy(), 0, DENY_ROLE_NOT_ALLOWED),  # * = installed roles only
        (caller(depth=2), "implementer", Policy(max_depth=3), 0, None),
        (caller(depth=3), "implementer", Policy(max_depth=3), 0, DENY_DEPTH_LIMIT),
        (caller(depth=0), "implementer", Policy(max_depth=0), 0, DENY_DEPTH_LIMIT),
        (caller(), "implementer", Policy(max_delegations=5), 4, None),
        (caller(), "implementer", Policy(max_delegations=5), 5, DENY_BUDGET_EXCEEDED),
        (caller(depth=9), "reviewer", Policy(max_depth=1, max_delegations=0), 0, DENY_ROLE_NOT_ALLOWED),  # first rule wins
        (caller(depth=9), "implementer", Policy(max_depth=1, max_delegations=0), 0, DENY_DEPTH_LIMIT),
    ],
)
def test_check_delegation(who: Delegator, target: str, policy: Policy, used: int, expected: str | None) -> None:
    denial = check_delegation(policy, who, target, installed_roles=INSTALLED, delegations_so_far=used)
    assert (denial.code if denial else None) == expected
    if denial:
        assert target in denial.message or "depth" in denial.message or "budget" in denial.message


def test_denial_message_lists_declared_roles() -> None:
    denial = check_delegation(Policy(), caller(allowed={"implementer", "lead"}), "reviewer",
                              installed_roles=INSTALLED, delegations_so_far=0)
    assert denial is not None
    assert "implementer, lead" in denial.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Policy()),
        ("[policy]\nmax_depth = 1\nagent_timeout = 2\n", Policy(max_depth=1, agent_timeout=2.0)),
        ("[policy]\nagent_timeout = 0.5\nkill_grace = 0\n", Policy(agent_timeout=0.5, kill_grace=0.0)),
        ("[policy]\nmax_delegations = 7\n", Policy(max_delegations=7)),
    ],
)
def test_policy_from_settings(text: str, expected: Policy) -> None:
    import tomllib

    from strawpot.model.settings import Source, layered

    assert Policy.from_settings(layered([Source("project", "strawpot.toml", tomllib.loads(text))])) == expected
