"""Session isolation: where a run's agents work, and how their work comes back at the end.

An `Isolator` is chosen by `[session] isolation` (`start --isolation`): `none` (agents work in the project
folder) or `worktree` (a git worktree on a new branch, merged back by `[session] merge`). Another kind (docker)
is one more class in `orchestrator/isolators.py`; nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from strawpot.model.errors import StrawpotError

# What became of an isolated environment, as recorded in session.json.
ACTIVE, MERGED, KEPT, REMOVED = "active", "merged", "kept", "removed"


@dataclass
class IsolatedEnv:
    """Where the agents of one run work (`working_dir`) and what the isolator needs to end it (`info`)."""

    kind: str
    working_dir: Path
    info: dict[str, Any] = field(default_factory=dict)
    state: str = ACTIVE

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "working_dir": str(self.working_dir), "state": self.state, **self.info}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IsolatedEnv:
        info = {k: v for k, v in data.items() if k not in ("kind", "working_dir", "state")}
        return cls(str(data.get("kind", "none")), Path(str(data.get("working_dir", "."))), info,
                   str(data.get("state", ACTIVE)))


@dataclass(frozen=True)
class Merged:
    """The end of a succeeded session: what to tell the user, whether to keep the environment, any failure."""

    message: str = ""
    keep: bool = False
    error: StrawpotError | None = None
    failed: bool = False  # the merge itself broke (a git call failed or hung): the run ends `failed`

    @property
    def work_lost(self) -> bool:
        """The run's work did not come back (the merge broke, or was refused and the worktree kept): the run
        ends `failed`, whatever its agents did."""
        return self.failed or (self.keep and self.error is not None)

    def summary(self) -> str:
        """The one line session.json keeps as the merge's result: the last line of `message` that is neither a
        warning nor a `refused:` line, then the error's message ("" when the run had nothing to merge)."""
        said = [line for line in self.message.splitlines()
                if line.strip() and not line.startswith(("warning:", "refused:"))]
        parts = [*said[-1:], *([self.error.message] if self.error is not None else [])]
        return " ".join("; ".join(parts).split())


class Isolator(Protocol):
    name: str

    def check(self, base_dir: Path) -> None:
        """Refuse (UsageError, exit 2) before anything runs when `base_dir` cannot be isolated."""

    def create(self, session_id: str, base_dir: Path) -> IsolatedEnv: ...

    def merge(self, env: IsolatedEnv, base_dir: Path) -> Merged:
        """Bring a succeeded session's work back to `base_dir`; never touches it when that cannot be done cleanly."""

    def keep(self, env: IsolatedEnv) -> list[str]:
        """A run that did not succeed keeps its environment; warnings about what it changed that was undone."""

    def cleanup(self, env: IsolatedEnv, base_dir: Path) -> None: ...


class NoIsolation:
    """Today's behaviour: every agent works in the project folder itself."""

    name = "none"

    def check(self, base_dir: Path) -> None:
        return None

    def create(self, session_id: str, base_dir: Path) -> IsolatedEnv:
        return IsolatedEnv(self.name, base_dir)

    def merge(self, env: IsolatedEnv, base_dir: Path) -> Merged:
        return Merged()

    def keep(self, env: IsolatedEnv) -> list[str]:
        return []

    def cleanup(self, env: IsolatedEnv, base_dir: Path) -> None:
        return None
