"""Projects you have used: `strawpot start` records each project folder in the user's data folder for `strawpot ui`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from strawpot.model import folders
from strawpot.model.fs import atomic_write, file_lock

PROJECTS_FILE = "projects.json"


@dataclass(frozen=True)
class UsedProject:
    """A project folder `start` ran in, and when it last did."""

    path: Path
    last_used: float

    @property
    def key(self) -> str:
        return project_key(self.path)


def project_key(path: Path) -> str:
    """A short id of a project folder for URLs: its name and a hash of its full path (names repeat)."""
    digest = hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in path.name)[:40].strip(".") or "project"
    return f"{name}-{digest}"


class ProjectStore:
    """`data_dir/projects.json`: one entry per project folder, rewritten atomically under a file lock."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self.data_dir = data_dir or folders.data_dir()
        self.file = self.data_dir / PROJECTS_FILE

    def load(self) -> tuple[list[UsedProject], str]:
        """The recorded projects, most recently used first, and a problem line ("" when the file reads well)."""
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
            found = [UsedProject(Path(str(p["path"])), float(p.get("last_used") or 0)) for p in raw["projects"]]
        except FileNotFoundError:
            return [], ""
        except (OSError, ValueError, TypeError, KeyError) as exc:
            return [], f"cannot read {self.file} ({exc.__class__.__name__}); fix or remove it"
        return sorted(found, key=lambda p: p.last_used, reverse=True), ""

    def record(self, path: Path, now: float | None = None) -> None:
        """Note that `path` was just used; an unreadable file is left as it is (nothing recorded is lost)."""
        with file_lock(self.data_dir / f".{PROJECTS_FILE}.lock"):
            found, problem = self.load()
            if problem:
                return
            others = [p for p in found if p.path != path]
            entries = [UsedProject(path, time.time() if now is None else now), *others]
            atomic_write(self.file, json.dumps({"projects": [
                {"path": str(p.path), "last_used": p.last_used} for p in entries]}, indent=2) + "\n")


def record_use(path: Path) -> None:
    """`strawpot start` ran in `path`: remember it for the UI. Never fails the start (a read-only data folder)."""
    with contextlib.suppress(OSError):
        ProjectStore().record(path)
