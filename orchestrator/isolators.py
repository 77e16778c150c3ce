"""Which isolator a run uses: the one `[session] isolation` names, or the one a recorded run used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.isolation import IsolatedEnv, Isolator, NoIsolation
from orchestrator.worktree import WorktreeIsolator

if TYPE_CHECKING:
    from strawpot.model.settings import Settings


def isolator_for(settings: Settings) -> Isolator:
    """The isolator `[session] isolation` names, set up with `[session] merge` and `[session] remote`."""
    kind = settings.get("session.isolation")
    if kind == "worktree":
        return WorktreeIsolator(settings.get("session.merge"), settings.get("session.remote"),
                                settings.get("session.max_file_size"), settings.get("session.git_timeout"))
    return NoIsolation()


def isolator_of(env: IsolatedEnv) -> Isolator:
    """The isolator that made a recorded environment (for `sessions --prune` and `resume`)."""
    if env.kind == "worktree":
        return WorktreeIsolator(str(env.info.get("merge", "patch")), str(env.info.get("remote", "origin")),
                                float(env.info.get("max_file_size", 50.0)))
    return NoIsolation()
