"""The two files between `strawpot integrations` and the supervisor in `strawpot ui`, in `{data}/integrations/`.

`wanted.json` holds the user's word per integration (`start`: on, `stop`: off, with when it was said); it is
kept across UIs and overrules `ui.integrations` for that integration. `status.json` is the supervisor's
report (state, pid, since, restarts, last error), rewritten when something changes; it is only current
while a UI holds its lock (orchestrator/ui_lock.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.integration_keys import integrations_dir
from orchestrator.run_record import State
from strawpot.model.fs import atomic_write, file_lock

WANTED_FILE = "wanted.json"
STATUS_FILE = "status.json"
# An integration's process: running and failed mean what they mean of a run; waiting is to restart, after a backoff.
RUNNING, WAITING, FAILED, STOPPED = State.RUNNING.value, "waiting", State.FAILED.value, "stopped"


@dataclass(frozen=True)
class Wish:
    on: bool
    at: float  # when it was said (0: ui.integrations, never said by hand); a new `start` retries a failed one


@dataclass(frozen=True)
class Status:
    name: str
    state: str  # RUNNING, WAITING, FAILED or STOPPED
    pid: int | None = None
    since: float | None = None  # when its process started (epoch seconds)
    restarts: int = 0
    error: str = ""  # why it failed: its exits and the tail of its log, or why it could not start
    folder: str = ""  # the package folder it runs from
    tried: float = 0.0  # when the supervisor last tried to start it (epoch seconds), started or not


def _load(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def wishes(data: Path) -> dict[str, Wish]:
    """What `strawpot integrations start|stop` last said of each integration."""
    found = {}
    for name, raw in _load(integrations_dir(data) / WANTED_FILE).items():
        if isinstance(raw, dict) and isinstance(raw.get("on"), bool) and isinstance(raw.get("at"), int | float):
            found[str(name)] = Wish(raw["on"], float(raw["at"]))
    return found


def say(data: Path, name: str, *, on: bool) -> None:
    """Record `start` (on) or `stop` of integration `name`."""
    folder = integrations_dir(data)
    with file_lock(folder / ".wanted.lock"):
        current = {n: asdict(w) for n, w in wishes(data).items()}
        current[name] = asdict(Wish(on, time.time()))
        atomic_write(folder / WANTED_FILE, json.dumps(current, indent=2, sort_keys=True) + "\n", mode=0o600)


def desired(enabled: Iterable[str], said: Mapping[str, Wish]) -> dict[str, Wish]:
    """Each integration's wish: `ui.integrations` turns one on, what the user said by hand overrules it."""
    return {**{name: Wish(True, 0.0) for name in enabled}, **said}


def write_status(data: Path, statuses: Iterable[Status]) -> None:
    document = {s.name: asdict(s) for s in statuses}
    atomic_write(integrations_dir(data) / STATUS_FILE, json.dumps(document, indent=2, sort_keys=True) + "\n",
                 mode=0o600, durable=False)


def read_status(data: Path) -> dict[str, Status]:
    found = {}
    for name, raw in _load(integrations_dir(data) / STATUS_FILE).items():
        try:
            found[str(name)] = Status(**{k: raw[k] for k in Status.__dataclass_fields__ if k in raw})
        except TypeError:
            continue
    return found
