"""Worktrees that ended runs left behind (failed, interrupted, a patch that did not apply): list and prune them."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from orchestrator.git import common_dir, repo_top
from orchestrator.isolation import ACTIVE, KEPT, IsolatedEnv
from orchestrator.isolators import isolator_of
from orchestrator.merge import guard_repo, recover_merges
from orchestrator.orphans import owner_alive
from orchestrator.session import PRIVATE_FILE, RUNNING, SESSION_FILE, list_sessions
from strawpot.model.fs import atomic_write


def leftover(data: dict[str, Any]) -> bool:
    """Whether a recorded run kept an isolated environment that is no longer in use."""
    isolation = data.get("isolation")
    if not isinstance(isolation, dict) or isolation.get("kind", "none") == "none":
        return False
    if isolation.get("state") not in (ACTIVE, KEPT):
        return False
    return not (data.get("state") == RUNNING and owner_alive(data))


def recover(project_dir: Path) -> list[str]:
    """Undo every merge-back a killed strawpot left half-done in the project's repository; a line for each."""
    if shutil.which("git") is None:
        return []
    top = repo_top(project_dir)
    return [] if top is None else recover_merges(common_dir(top))


def prune(sessions_root: Path, project_dir: Path) -> list[dict[str, Any]]:
    """Remove every leftover worktree and its branch; the runs whose environment was removed."""
    pruned = []
    for data in list_sessions(sessions_root):
        if not leftover(data):
            continue
        env = IsolatedEnv.from_dict(data["isolation"])
        if env.state == ACTIVE:  # the run never reached its end (killed): undo what it planted in .git
            for line in guard_repo(env):
                print(line, file=sys.stderr)
        env.state = KEPT  # not merged: the branch goes too
        isolator_of(env).cleanup(env, project_dir)
        data["isolation"] = env.to_dict()
        atomic_write(sessions_root / str(data["run_id"]) / SESSION_FILE, json.dumps(data, indent=2) + "\n",
                     mode=PRIVATE_FILE)
        pruned.append(data)
    return pruned
