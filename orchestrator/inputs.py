"""What a run ran from, recorded in its session.json: the lock's sha256, the locked packages, policy and settings.

`strawpot resume` compares the recorded lock with today's and refuses (exit 4) when they differ.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model.errors import LockOutdated
from strawpot.model.fs import read_own_file

if TYPE_CHECKING:
    from orchestrator.policy import Policy
    from strawpot.model.lockfile import Lockfile
    from strawpot.model.settings import Settings

MAX_LISTED = 20


def lock_sha256(path: Path) -> str:
    return hashlib.sha256(read_own_file(path)).hexdigest()


def locked_packages(lock: Lockfile) -> dict[str, dict[str, Any]]:
    """{"kind:name": {version, archive_sha256}} of every package of the lock (agents' lists point into it)."""
    return {f"{p.kind.value}:{p.name}": {"version": p.version, "archive_sha256": p.archive_sha256}
            for p in lock.packages}


def run_inputs(lock_path: Path, lock: Lockfile, policy: Policy, settings: Settings) -> dict[str, Any]:
    from strawpot.model.settings import SCHEMA

    effective = {}
    for key in SCHEMA:
        value = settings.get(key)
        effective[key] = list(value) if isinstance(value, tuple) else value
    return {"lock_sha256": lock_sha256(lock_path), "packages": locked_packages(lock), "policy": asdict(policy),
            "settings": effective}


def check_same_lock(run_id: str, recorded: dict[str, Any], lock_path: Path, lock: Lockfile) -> None:
    """Raise LockOutdated (exit 4) naming what changed when strawpot.lock is not the one the run recorded."""
    if not recorded.get("lock_sha256") or recorded["lock_sha256"] == lock_sha256(lock_path):
        return
    before = recorded.get("packages") or {}
    now = locked_packages(lock)
    changes = []
    for key in sorted(set(before) | set(now)):
        old, new = before.get(key), now.get(key)
        if old is None:
            changes.append(f"{key} {new['version'] if new else ''} added".replace("  ", " "))
        elif new is None:
            changes.append(f"{key} {old.get('version')} removed")
        elif old != new:
            what = (f"{old.get('version')} -> {new['version']}" if old.get("version") != new["version"]
                    else "same version, other archive")
            changes.append(f"{key} {what}")
    listed = "\n".join(f"  {c}" for c in changes[:MAX_LISTED]) or "  (the same packages; the lock file's text differs)"
    raise LockOutdated(f"strawpot.lock changed since run {run_id} started:\n{listed}",
                       hint="resume from the tree the run started with (e.g. `git checkout strawpot.lock` "
                            "and `strawpot sync`), or start a new run")
