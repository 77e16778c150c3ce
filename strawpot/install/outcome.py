"""What an install-family run reports: the `Reporter` it tells as it goes, and the `Outcome` it returns."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from strawpot.install.build import Builds
from strawpot.install.plan import Change
from strawpot.model.kinds import Kind
from strawpot.model.layout import Project
from strawpot.model.lockfile import Lockfile
from valueclass import State

if TYPE_CHECKING:
    from strawpot.install.build import Script
    from strawpot.install.source_moves import SourceMove
    from strawpot.install.tools import MissingTool
    from strawpot.model.lockfile import LockedPackage


class Reporter(Protocol):
    """Where a run tells the user what it does (the command renders it; tests ignore it)."""

    def status(self, message: str) -> None: ...

    def progress(self, label: str, total: int) -> contextlib.AbstractContextManager[Callback]: ...

    def confirm_script(self, script: Script) -> bool:
        """Show an untrusted install script in full and ask whether to trust it (False: cannot ask)."""
        ...

    def waiting(self, message: str) -> contextlib.AbstractContextManager[None]: ...

    def running(self, message: str) -> contextlib.AbstractContextManager[None]:
        """While a long task (an install script) runs: show that it still does."""
        ...


class Callback(Protocol):
    def __call__(self, pkg: LockedPackage) -> None: ...


class QuietReporter:
    def status(self, message: str) -> None:
        return None

    @contextlib.contextmanager
    def progress(self, label: str, total: int) -> Iterator[Callback]:
        yield lambda pkg: None

    def confirm_script(self, script: Script) -> bool:
        return False

    @contextlib.contextmanager
    def waiting(self, message: str) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def running(self, message: str) -> Iterator[None]:
        yield


class Outcome(State):
    """What one run did; filled in as it goes (`project`, `lock`, `unchanged` and `dry_run` may be given)."""

    _fields = ("project", "lock", "resolved", "stale", "stale_because", "lock_changed", "lock_written",
               "manifest_written", "changes", "unchanged", "dry_run", "missing_tools", "tool_hints_ran", "saved",
               "previous_specs", "dropped", "builds", "warnings", "gitignored", "moved", "too_young")

    def __init__(self, project: Project, lock: Lockfile | None = None, *, unchanged: int = 0,
                 dry_run: bool = False) -> None:
        self.project, self.lock, self.unchanged, self.dry_run = project, lock, unchanged, dry_run
        self.resolved = False
        self.stale = False
        self.stale_because = ""  # " (...)": why, when strawpot.toml alone does not say (the release cooldown changed)
        self.lock_changed = False
        self.lock_written = False
        self.manifest_written = False
        self.changes: list[Change] = []
        self.missing_tools: list[MissingTool] = []
        self.tool_hints_ran = False  # install commands ran (--install-tools, or yes at the prompt); still missing after
        self.saved: list[tuple[Kind, str, str]] = []  # manifest entries written
        self.previous_specs: dict[tuple[Kind, str], str] = {}  # of saved entries that existed
        self.dropped: list[tuple[Kind, str, str]] = []  # manifest entries removed, with their spec
        self.builds = Builds()
        self.warnings: list[str] = []
        self.gitignored: Path | None = None  # the .gitignore this first install added `.strawpot/` to
        self.moved: list[SourceMove] = []  # packages the new lock has from another registry
        # versions `[install] min_release_age` kept out of the resolution: package id -> [(version, published ms)]
        self.too_young: dict[str, list[tuple[str, int]]] = {}

    def as_dict(self) -> dict[str, object]:
        return {
            "project": str(self.project.dir),
            "dry_run": self.dry_run,
            "resolved": self.resolved,
            "lock": {
                "path": str(self.project.lock_path),
                "changed": self.lock_changed,
                "written": self.lock_written,
                "packages": len(self.lock.packages) if self.lock else 0,
                "moved": [move.as_dict() for move in self.moved],
            },
            "manifest": {
                "written": self.manifest_written,
                "added": [{"kind": k.value, "name": n, "spec": s, "previous_spec": self.previous_specs.get((k, n))}
                          for k, n, s in self.saved],
            },
            "installed": [c.as_dict() for c in self.changes if c.version is not None],
            "removed": [c.as_dict() for c in self.changes if c.version is None],
            "unchanged": self.unchanged,
            "missing_tools": [t.as_dict() for t in self.missing_tools],
            "scripts": self.builds.as_dict(),
            "warnings": self.warnings,
            "too_young": [{"kind": pid.partition(":")[0], "name": pid.partition(":")[2], "version": version,
                           "published_at": published / 1000}
                          for pid, found in self.too_young.items() for version, published in found],
        }
