"""The error tree every layer above the leaves raises, and the exit code of each.

    StrawpotError (1)           an expected failure: one readable line, never a traceback
    ├── UsageError (2)          the command line or an input file is wrong
    ├── ConflictError (3)       no set of versions satisfies the requirements
    ├── LockOutdated (4)        strawpot.lock does not match strawpot.toml
    ├── IntegrityFailure (5)    bytes differ from the sha256 a registry or the lock promised
    ├── RegistryUnreachable (6) the registry could not be reached
    └── MissingToolError (7)    a tool, agent or environment variable a package needs is missing, or a
                                registry backend's extra (strawpot[postgres], strawpot[s3])
"""

from __future__ import annotations


class StrawpotError(Exception):
    """An expected failure, shown to the user as `error: <message>` and a hint."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(StrawpotError):
    exit_code = 2


class ConflictError(StrawpotError):
    exit_code = 3


class LockOutdated(StrawpotError):
    exit_code = 4


class IntegrityFailure(StrawpotError):
    exit_code = 5


class RegistryUnreachable(StrawpotError):
    exit_code = 6


class MissingToolError(StrawpotError):
    exit_code = 7


EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "error",
    2: "usage error or invalid input file",
    3: "resolution conflict",
    4: "lock out of date",
    5: "integrity failure",
    6: "registry unreachable",
    7: "missing tool, agent or environment variable",
}
