"""What a Denden request comes to, as plain values: OK with a result, DENIED or ERROR with a code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Denial codes (status DENIED): the request was understood and refused by policy.
DENY_ROLE_NOT_ALLOWED = "DENY_ROLE_NOT_ALLOWED"
DENY_DEPTH_LIMIT = "DENY_DEPTH_LIMIT"
DENY_BUDGET_EXCEEDED = "DENY_BUDGET_EXCEEDED"
DENY_MISSING_ENV = "DENY_MISSING_ENV"  # the target role's agent or skills need variables this run lacks

# Error codes (status ERROR): the request could not be carried out.
INVALID_REQUEST = "INVALID_REQUEST"
ERR_SUBAGENT_TIMEOUT = "ERR_SUBAGENT_TIMEOUT"
ERR_SUBAGENT_FAILURE = "ERR_SUBAGENT_FAILURE"
ERR_SUBAGENT_CANCELLED = "ERR_SUBAGENT_CANCELLED"
ERR_INVALID_RESULT = "ERR_INVALID_RESULT"
ERR_SPAWN_FAILED = "ERR_SPAWN_FAILED"
ERR_UNKNOWN_AGENT = "ERR_UNKNOWN_AGENT"
ERR_NO_USER = "ERR_NO_USER"
ERR_INTERNAL = "ERR_INTERNAL"
ERR_TOO_LARGE = "ERR_TOO_LARGE"  # a request over a size limit (a memory entry)


@dataclass(frozen=True)
class Outcome:
    """The answer to one request; `value` is the result when `status` is "ok"."""

    status: str  # "ok" | "denied" | "error"
    value: Any = None
    code: str = ""
    message: str = ""
    retryable: bool = False

    @classmethod
    def ok(cls, value: Any = None) -> Outcome:
        return cls("ok", value)

    @classmethod
    def denied(cls, code: str, message: str) -> Outcome:
        return cls("denied", code=code, message=message)

    @classmethod
    def error(cls, code: str, message: str, *, retryable: bool = False) -> Outcome:
        return cls("error", code=code, message=message, retryable=retryable)


@dataclass(frozen=True)
class Caller:
    """Who sent a request, from its trace."""

    run_id: str
    agent_id: str
    parent_id: str
