"""Stored schedules (cron + role + task), their fire history, and when each fires next."""

from __future__ import annotations

import builtins
import json
import os
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write

OVERLAP_POLICIES = ("skip", "queue")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class ScheduleError(UsageError):
    """A schedule that cannot be stored or read back; one readable line, exit 2."""


@dataclass(frozen=True)
class Schedule:
    """One named recurring headless session."""

    name: str
    cron: str
    project: Path
    role: str
    task: str
    params: dict[str, str] = field(default_factory=dict)
    timezone: str = "UTC"
    overlap: str = "skip"


@dataclass(frozen=True)
class ScheduleRun:
    """One fire of a schedule: its session's run id (None if none started) and what came of it."""

    schedule: str
    run_id: str | None
    fired_at: datetime
    outcome: str


def default_data_dir() -> Path:
    """The user's data folder for StrawPot (STRAWPOT_DATA_DIR overrides it, as tests do)."""
    from platformdirs import user_data_dir

    return Path(os.environ.get("STRAWPOT_DATA_DIR") or user_data_dir("strawpot"))


def local_timezone() -> str:
    """The IANA name of the local zone, or UTC when it cannot be named."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        return tz
    try:
        link = os.readlink("/etc/localtime")
    except OSError:
        return "UTC"
    marker = "zoneinfo/"
    return link.split(marker, 1)[1] if marker in link else "UTC"


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown timezone {name!r}: use an IANA name such as Europe/Paris") from None


def next_fire(schedule: Schedule, after: datetime) -> datetime | None:
    """The first fire time strictly after `after` (in the schedule's zone), or None if it never fires."""
    zone = _zone(schedule.timezone)
    start = after.astimezone(zone) if after.tzinfo else after.replace(tzinfo=zone)
    try:
        return next(CronSim(schedule.cron, start))
    except CronSimError as exc:
        raise ScheduleError(f"invalid cron expression {schedule.cron!r}: {exc}") from None
    except StopIteration:
        return None


def validate(schedule: Schedule, now: datetime) -> None:
    """Raise ScheduleError (one line) if `schedule` cannot be stored."""
    if not _NAME.match(schedule.name):
        raise ScheduleError(
            f"invalid schedule name {schedule.name!r}: use lowercase letters, digits, '.', '_' or '-'"
        )
    if schedule.overlap not in OVERLAP_POLICIES:
        raise ScheduleError(f"invalid overlap {schedule.overlap!r}: use one of {', '.join(OVERLAP_POLICIES)}")
    if not schedule.role or not schedule.task:
        raise ScheduleError("a schedule needs a role and a task")
    if next_fire(schedule, now) is None:
        raise ScheduleError(f"cron expression {schedule.cron!r} never fires: pick a date that exists")


class ScheduleStore:
    """Schedules in `data_dir/schedules.json`, each one's history in `data_dir/schedule-history/NAME.json`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._file = data_dir / "schedules.json"
        self._history = data_dir / "schedule-history"

    def list(self) -> list[Schedule]:
        """All stored schedules, sorted by name."""
        try:
            raw = json.loads(self._file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ScheduleError(f"cannot read {self._file}: {exc}; fix or remove the file") from None
        return sorted((_from_json(item) for item in raw.get("schedules", [])), key=lambda s: s.name)

    def get(self, name: str) -> Schedule | None:
        """The schedule called `name`, or None."""
        return next((s for s in self.list() if s.name == name), None)

    def add(self, schedule: Schedule) -> None:
        """Store `schedule`; refuses a name already taken."""
        current = self.list()
        if any(s.name == schedule.name for s in current):
            raise ScheduleError(f"schedule {schedule.name!r} already exists: remove it first")
        self._write([*current, schedule])

    def remove(self, name: str) -> None:
        """Delete the schedule `name` (its history stays readable)."""
        current = self.list()
        if not any(s.name == name for s in current):
            raise ScheduleError(f"no schedule named {name!r}: see `strawpot schedule list`")
        self._write([s for s in current if s.name != name])

    def history(self, name: str) -> builtins.list[ScheduleRun]:
        """Every recorded fire of `name`, oldest first."""
        try:
            raw = json.loads((self._history / f"{name}.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [
            ScheduleRun(
                schedule=str(r["schedule"]),
                run_id=r.get("run_id"),
                fired_at=datetime.fromisoformat(str(r["fired_at"])),
                outcome=str(r["outcome"]),
            )
            for r in raw.get("runs", [])
        ]

    def record(self, run: ScheduleRun) -> None:
        """Append `run` to its schedule's history."""
        runs = [*self.history(run.schedule), run]
        payload = {
            "runs": [
                {
                    "schedule": r.schedule,
                    "run_id": r.run_id,
                    "fired_at": r.fired_at.isoformat(),
                    "outcome": r.outcome,
                }
                for r in runs
            ]
        }
        atomic_write(self._history / f"{run.schedule}.json", json.dumps(payload, indent=2) + "\n")

    def _write(self, schedules: builtins.list[Schedule]) -> None:
        items = [_to_json(s) for s in sorted(schedules, key=lambda s: s.name)]
        atomic_write(self._file, json.dumps({"schedules": items}, indent=2) + "\n")


def _to_json(schedule: Schedule) -> dict[str, Any]:
    data = asdict(schedule)
    data["project"] = str(schedule.project)
    return data


def _from_json(item: dict[str, Any]) -> Schedule:
    return Schedule(
        name=str(item["name"]),
        cron=str(item["cron"]),
        project=Path(str(item["project"])),
        role=str(item["role"]),
        task=str(item["task"]),
        params={str(k): str(v) for k, v in dict(item.get("params", {})).items()},
        timezone=str(item.get("timezone", "UTC")),
        overlap=str(item.get("overlap", "skip")),
    )
