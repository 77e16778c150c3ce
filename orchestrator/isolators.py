"""Which isolator a run uses: the one `[session] isolation` names, or the one a recorded run used."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.isolation import KEPT, IsolatedEnv, Isolator, Merged, NoIsolation
from orchestrator.session import PAUSED, State
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


def end_isolation(isolator: Isolator, env: IsolatedEnv, base: Path, state: str, run_id: str) -> Merged:
    """The end of a run's isolated environment: a succeeded run's work merged back (all or nothing), any other's
    kept, with what to tell the user. Local and remote runs (orchestrator/ray_runner.py) end the same way."""
    if state == State.SUCCEEDED:
        merged = isolator.merge(env, base)
        if not merged.keep:
            isolator.cleanup(env, base)
        return merged
    if env.kind == NoIsolation.name:
        return Merged()
    env.state = KEPT
    then = (f"`strawpot resume {run_id}` continues in it" if state == PAUSED
            else "`strawpot sessions --prune` removes it")
    undone = "".join(f"{line}\n" for line in isolator.keep(env))
    return Merged(f"{undone}the session's worktree is kept at {env.info.get('path')} "
                  f"(branch {env.info.get('branch')}); {then}", keep=True)
