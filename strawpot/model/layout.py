"""Where a project's files live: the manifest, the lock, the installed tree and the session state.

Import-light on purpose (stdlib only): the no-op install path reads it before anything heavy loads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "strawpot.toml"
LOCK_NAME = "strawpot.lock"
TREE_DIR = ".strawpot"
# strawhub 0.1.54 keeps its own JSON lockfile at $STRAWPOT_HOME/strawpot.lock, so the global scope's
# manifest and lock live one folder down, where neither tool overwrites the other's file.
GLOBAL_SCOPE_DIR = "global"


def global_root() -> Path:
    env = os.environ.get("STRAWPOT_HOME")
    return Path(env) if env else Path.home() / TREE_DIR


@dataclass(frozen=True)
class Project:
    """A project folder (`strawpot.toml`, `strawpot.lock`, `.strawpot/`), or the global scope."""

    dir: Path
    is_global: bool = False

    @classmethod
    def at(cls, project: Path | None = None, *, is_global: bool = False) -> Project:
        if is_global:
            return cls(global_root() / GLOBAL_SCOPE_DIR, is_global=True)
        return cls((project or Path.cwd()).resolve())

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST_NAME

    @property
    def lock_path(self) -> Path:
        return self.dir / LOCK_NAME

    @property
    def tree_root(self) -> Path:
        """The installed tree: `.strawpot/` in a project, `$STRAWPOT_HOME` itself for the global scope."""
        return self.dir.parent if self.is_global else self.dir / TREE_DIR

    @property
    def lock_file_path(self) -> Path:
        """The advisory file lock that serialises strawpot processes on this project."""
        return self.tree_root / ".lock"

    @property
    def sessions_dir(self) -> Path:
        return self.tree_root / "sessions"

    @property
    def memory_dir(self) -> Path:
        return self.tree_root / "memory"
