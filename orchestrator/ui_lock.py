"""One `strawpot ui` a data folder: `ui.lock` (a flock held while it serves) and `ui.json`, its pid and origin.

The origin (`http://127.0.0.1:PORT`) is what `strawpot integrations` and the integrations' API URLs need; the
UI's secret is never written here. A second UI on the same data folder is refused, naming the running one.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
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
    """The lock a running UI holds, and its record."""

    def __init__(self, data: Path) -> None:
        self.data = data

    def record(self, origin: str) -> None:
        """Write `ui.json` ({pid, origin, started}), 0600: the CLI finds the UI (never its secret) there."""
        atomic_write(self.data / RECORD_FILE, json.dumps(
            {"pid": os.getpid(), "origin": origin, "started": time.time()}) + "\n", mode=0o600)


@contextlib.contextmanager
def hold_ui(data: Path) -> Iterator[UiHold]:
    """Hold `ui.lock` for as long as the UI serves; UiRunning (one line naming the running UI) when another does."""
    lock = SchedulerLock(data, LOCK_FILE)
    for attempt in range(_ATTEMPTS):
        held = lock.acquire()
        if held is None:
            break
        if attempt == _ATTEMPTS - 1:
            other = _record(data)
            where = f" at {other.origin}" if other.origin and other.pid == held else ""
            raise UiRunning(f"another strawpot ui (pid {held or 'unknown'}{where}) already serves the data folder "
                            f"{data}", hint="use that one, or stop it first (Ctrl-C in its terminal, or kill PID)")
        time.sleep(0.1)
    try:
        yield UiHold(data)
    finally:
        with contextlib.suppress(OSError):
            (data / RECORD_FILE).unlink()
        lock.release()
