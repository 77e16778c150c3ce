"""One `strawpot ui` a data folder: `ui.lock` (a flock held while it serves) and `ui.json`, its pid and origin.

The origin (`http://127.0.0.1:PORT`) is what `strawpot integrations` and the integrations' API URLs need; the
UI's secret is never written here. A second UI on the same data folder is refused, naming the running one.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.scheduler_lock import SchedulerLock
from strawpot.model.errors import StrawpotError
from strawpot.model.fs import atomic_write

LOCK_FILE = "ui.lock"
RECORD_FILE = "ui.json"
_ATTEMPTS = 5  # a `strawpot integrations` probing the lock holds it for a moment: try again before refusing


class UiRunning(StrawpotError):
    """Another `strawpot ui` serves this data folder (exit 1)."""


@dataclass(frozen=True)
class RunningUi:
    pid: int
    origin: str  # "" when the UI has not recorded it yet (between taking the lock and binding its socket)


def _record(data: Path) -> RunningUi:
    try:
        raw = json.loads((data / RECORD_FILE).read_text(encoding="utf-8"))
        return RunningUi(int(raw["pid"]), str(raw["origin"]))
    except (OSError, ValueError, KeyError, TypeError):
        return RunningUi(0, "")


def running_ui(data: Path) -> RunningUi | None:
    """The UI serving `data`, or None when none does (its lock is free)."""
    lock = SchedulerLock(data, LOCK_FILE)
    held = lock.acquire()
    if held is None:
        lock.release()
        return None
    found = _record(data)
    return found if found.pid == held or not held else RunningUi(held, "")


class UiHold:
    """The lock a running UI holds (`take`), and its record; `release` when the UI stops (the lock also goes with
    the process, so a killed UI leaves a `ui.json` nobody reads: the lock is what says a UI runs)."""

    def __init__(self, data: Path, lock: SchedulerLock) -> None:
        self.data, self._lock = data, lock

    @classmethod
    def take(cls, data: Path) -> UiHold:
        """Take `ui.lock`; UiRunning (one line naming the running UI) when another UI holds it."""
        lock = SchedulerLock(data, LOCK_FILE)
        for attempt in range(_ATTEMPTS):
            held = lock.acquire()
            if held is None:
                return cls(data, lock)
            if attempt < _ATTEMPTS - 1:
                time.sleep(0.1)
        other = _record(data)
        where = f" at {other.origin}" if other.origin and other.pid == held else ""
        raise UiRunning(f"another strawpot ui (pid {held or 'unknown'}{where}) already serves the data folder {data}",
                        hint="use that one, or stop it first (Ctrl-C in its terminal, or kill PID)")

    def record(self, origin: str) -> None:
        """Write `ui.json` ({pid, origin, started}), 0600: the CLI finds the UI (never its secret) there."""
        atomic_write(self.data / RECORD_FILE, json.dumps(
            {"pid": os.getpid(), "origin": origin, "started": time.time()}) + "\n", mode=0o600)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            (self.data / RECORD_FILE).unlink()
        self._lock.release()
