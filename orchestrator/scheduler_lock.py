"""`scheduler.lock` in the data folder: the flock that keeps one scheduler serving it, and who holds it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from strawpot.model.fs import open_nofollow

LOCK_FILE = "scheduler.lock"


class SchedulerLock:
    """`scheduler.lock` in the data folder, held (flock) for as long as one scheduler serves; it names its pid."""

    def __init__(self, data_dir: Path, name: str = LOCK_FILE) -> None:
        self.path = data_dir / name  # `ui.lock` for `strawpot ui` itself (orchestrator/ui_lock.py)
        self._fh: IO[str] | None = None

    def acquire(self) -> int | None:
        """Take the lock: None when taken, else the pid of the process holding it (0 if it cannot be read)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Not through a link planted in the data folder (its target was truncated); held open for the scheduler's life.
        fh = os.fdopen(open_nofollow(self.path, os.O_RDWR | os.O_CREAT), "r+", encoding="ascii")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            text = fh.read().strip()
            fh.close()
            return int(text) if text.isdigit() else 0
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return None

    def release(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.truncate(0)
            self._fh.close()  # closing drops the flock
            self._fh = None


def held_message(pid: int, data_dir: Path) -> str:
    """What to say when another scheduler holds the lock."""
    who = f"pid {pid}" if pid else "a process whose pid is not recorded"
    return f"another scheduler ({who}: `strawpot schedule serve` or `strawpot ui`) already serves {data_dir}"

