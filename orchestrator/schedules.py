"""Stored schedules (cron + role + task), their fire history, and when each fires next."""

from __future__ import annotations

import builtins
import json
import re
import shlex
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from orchestrator.local_zone import local_timezone
from orchestrator.session import State
from strawpot.model.display import short_repr
from strawpot.model.errors import UsageError
from strawpot.model.fs import atomic_write, file_lock, read_own_text
from strawpot.model.package_types import slug_error

OVERLAP_POLICIES = ("skip", "queue", "parallel")
RUNNERS = ("local", "ray")  # `start --runner`
RUNNING = State.RUNNING  # a ScheduleRun's outcome while its session runs; then the session's end state
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")  # whole names only (fullmatch: `$` matches before a newline)
CRON_FIELDS = "minute hour day-of-month month day-of-week"


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
    created: datetime | None = None  # when it was added: fires missed since then count as missed
    notify: str = ""  # INTEGRATION[:CHAT_ID]: where a fire's end is told (`schedule add --notify`), "" nowhere
    runner: str = ""  # where its sessions run (`schedule add --runner`): local | ray; "" the project's [session] runner


@dataclass(frozen=True)
class ScheduleRun:
    """One fire of a schedule: the run id it gave `strawpot start` (None if it never got that far) and what came of it.

    `outcome` is `running` while the session runs, then its end state (`succeeded`, `failed`, ...), or
    `skipped`/`missed` for a fire that started nothing; `error` is the one line that says why it failed. A run id
    whose `strawpot start` refused before the session began (a tampered tree) has no run folder.
    """

    schedule: str
    run_id: str | None
    fired_at: datetime  # when the scheduler acted
    outcome: str
    scheduled_for: datetime | None = None  # the cron time this fire is for; None for `schedule run`
    ended_at: datetime | None = None
    exit_code: int | None = None
    error: str = ""
    pid: int | None = None  # the `strawpot start` process while it runs




def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown timezone {name!r}: use an IANA name such as Europe/Paris") from None


def next_fire(schedule: Schedule, after: datetime) -> datetime | None:
    """The first fire time strictly after `after` (in the schedule's zone), or None if it never fires."""
    return _step(schedule, after, reverse=False)


def last_fire(schedule: Schedule, until: datetime) -> datetime | None:
    """The latest fire time at or before `until` (in the schedule's zone), or None if there is none."""
    # cronsim's reverse walk starts strictly before a whole second and at or before one with a fraction
    return _step(schedule, until if until.microsecond else until + timedelta(microseconds=1), reverse=True)


def _step(schedule: Schedule, start: datetime, *, reverse: bool) -> datetime | None:
    if (fields := len(schedule.cron.split())) != len(CRON_FIELDS.split()):  # cronsim reads a sixth as seconds
        raise ScheduleError(f"invalid cron expression {schedule.cron!r}: use five fields ({CRON_FIELDS}), not {fields}")
    zone = _zone(schedule.timezone)
    start = start.astimezone(zone) if start.tzinfo else start.replace(tzinfo=zone)
    try:
        return next(CronSim(schedule.cron, start, reverse=reverse))
    except CronSimError as exc:
        raise ScheduleError(f"invalid cron expression {schedule.cron!r}: {exc}") from None
    except StopIteration:
        return None


def next_fire_line(schedule: Schedule, after: datetime) -> str:
    """When `schedule` fires next after `after`, in its zone and in this process's local time, as one line."""
    at = next_fire(schedule, after)
    if at is None:
        return f"schedule {shown_name(schedule.name)}: fires no more"
    return (f"schedule {shown_name(schedule.name)}: next fire {at:%Y-%m-%d %H:%M %Z} ({schedule.timezone}), "
            f"{at.astimezone():%Y-%m-%d %H:%M %Z} local time")


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def check_name(name: str) -> None:
    """Raise ScheduleError (one line) unless `name` is a schedule's name (stored ones are checked again: an older
    strawpot took a trailing newline, and schedules.json may be edited by hand)."""
    if not valid_name(name):
        raise ScheduleError(f"invalid schedule name {name!r}: use lowercase letters, digits, '.', '_' or '-'")


def shown_name(name: str) -> str:
    """A stored name as one line: itself when valid, else with its control and non-ASCII characters escaped
    (`nightly\\n`); `remove` takes either form."""
    return name if valid_name(name) else name.encode("unicode_escape").decode("ascii")


def validate(schedule: Schedule, now: datetime) -> None:
    """Raise ScheduleError (one line) if `schedule` cannot be stored."""
    check_name(schedule.name)
    if schedule.overlap not in OVERLAP_POLICIES:
        raise ScheduleError(f"invalid overlap {schedule.overlap!r}: use one of {', '.join(OVERLAP_POLICIES)}")
    if schedule.runner not in ("", *RUNNERS):
        raise ScheduleError(f"invalid runner {schedule.runner!r}: use one of {', '.join(RUNNERS)}")
    if not schedule.role or not schedule.task:
        raise ScheduleError("a schedule needs a role and a task")
    if next_fire(schedule, now) is None:
        raise ScheduleError(f"cron expression {schedule.cron!r} never fires: pick a date that exists")
    notify_target(schedule.notify)


def add_schedule(store: ScheduleStore, schedule: Schedule, now: datetime) -> Schedule:
    """Check and store `schedule` as `schedule add` does (the UI's add form calls this too): its project folder
    resolved, its zone the local one when it names none (""), created `now`; ScheduleError (one line) if it cannot be."""
    schedule = replace(schedule, project=schedule.project.resolve(), timezone=schedule.timezone or local_timezone(),
                       created=now)
    validate(schedule, now)
    store.add(schedule)
    return schedule


def notify_target(notify: str) -> tuple[str, str]:
    """The integration and chat id of a schedule's `notify` (INTEGRATION[:CHAT_ID]); ScheduleError for another
    shape. ("", "") when it notifies nobody."""
    integration, _, chat_id = notify.partition(":")
    if notify and (slug_error(integration) or not chat_id.isprintable() or len(chat_id) > 200):
        raise ScheduleError(f"invalid --notify {notify!r}: use INTEGRATION or INTEGRATION:CHAT_ID, e.g. "
                            "strawpot-telegram:123456")
    return integration, chat_id


@dataclass(frozen=True)
class BrokenSchedule:
    """An entry of schedules.json that cannot be read as a schedule: its place in the file, its name if it has
    one, and what is wrong with it."""

    position: int  # 1 for the first entry
    name: str | None
    problem: str

    def fix(self, file: Path) -> str:
        """What to do about it, in words."""
        if self.name is None:
            return f"fix or delete entry {self.position} of {file}"
        return f"fix it in {file}, or `strawpot schedule remove {shlex.quote(shown_name(self.name))}`"

    def describe(self, file: Path) -> str:
        """One line: which entry, what is wrong, what to do."""
        which = f"schedule {shown_name(self.name)}" if self.name is not None else f"entry {self.position}"
        return f"cannot read {which}: {self.problem}; {self.fix(file)}"


class ScheduleStore:
    """Schedules in `data_dir/schedules.json`, each one's history in `data_dir/schedule-history/NAME.json`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._file = data_dir / "schedules.json"
        self._lock = data_dir / ".schedules.json.lock"
        self._history = data_dir / "schedule-history"

    @property
    def file(self) -> Path:
        return self._file

    def read(self) -> tuple[builtins.list[Schedule], builtins.list[BrokenSchedule]]:
        """The stored schedules sorted by name, and the entries that cannot be read as one (in file order); a file
        that is not a list of schedules at all raises ScheduleError."""
        good, broken = [], []
        for position, item in enumerate(self._items(), 1):
            try:
                if not isinstance(item, dict):
                    raise TypeError(f"{short_repr(item)} is not a table of fields")
                good.append(_from_json(item))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:  # one entry edited into another shape
                name = item.get("name") if isinstance(item, dict) else None
                broken.append(BrokenSchedule(position, name if isinstance(name, str) else None, _why(exc)))
        return sorted(good, key=lambda s: s.name), broken

    def list(self) -> builtins.list[Schedule]:
        """All stored schedules that can be read, sorted by name (`read` tells the others)."""
        return self.read()[0]

    def get(self, name: str) -> Schedule | None:
        """The schedule called `name`, or None (also when its entry cannot be read: `unreadable` says why)."""
        return next((s for s in self.list() if s.name == name), None)

    def unreadable(self, name: str) -> str:
        """Why the entry called `name` cannot be read as a schedule, with what to do ("" when it can, or there is
        no such entry)."""
        bad = next((b for b in self.read()[1] if b.name == name), None)
        return bad.describe(self._file) if bad is not None else ""

    def add(self, schedule: Schedule) -> None:
        """Store `schedule`; refuses a name already taken (the entries that cannot be read stay as they are)."""
        with file_lock(self._lock):  # two `schedule add` at once: each keeps the other's schedule
            items = self._items()
            if any(isinstance(item, dict) and item.get("name") == schedule.name for item in items):
                raise ScheduleError(f"schedule {schedule.name!r} already exists: remove it first")
            self._write([*items, _to_json(schedule)])

    def remove(self, name: str) -> None:
        """Delete the schedule `name`, or the one whose invalid stored name `list` shows as `name`, readable or
        not (its history stays readable)."""
        with file_lock(self._lock):
            items = self._items()
            names = [item.get("name") if isinstance(item, dict) else None for item in items]
            if name not in names:
                name = next((n for n in names if isinstance(n, str) and shown_name(n) == name), name)
            if name not in names:
                raise ScheduleError(f"no schedule named {name!r}: see `strawpot schedule list`")
            self._write([item for item, stored in zip(items, names, strict=True) if stored != name])

    def _items(self) -> builtins.list[Any]:
        """The raw entries of schedules.json ([] when there is none)."""
        try:
            raw = json.loads(read_own_text(self._file))  # never a FIFO or a device a cloned .strawpot planted
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ScheduleError(f"cannot read {self._file}: {exc}; fix or remove the file") from None
        items = raw.get("schedules", []) if isinstance(raw, dict) else None
        if not isinstance(items, builtins.list):
            raise ScheduleError(f"cannot read {self._file}: it is not {{\"schedules\": [...]}}; fix or remove the file")
        return items

    def history(self, name: str) -> builtins.list[ScheduleRun]:
        """Every recorded fire of `name`, oldest first."""
        if not valid_name(name):
            raise ScheduleError(f"no schedule named {name!r}: see `strawpot schedule list`")
        try:
            raw = json.loads(read_own_text(self._history / f"{name}.json"))
            return [_run_from_json(r) for r in raw.get("runs", [])]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # a file edited into another shape
            raise ScheduleError(f"cannot read the history of {name!r}: {_why(exc)}; fix or remove "
                                f"{self._history / (name + '.json')}") from None

    def record(self, run: ScheduleRun) -> None:
        """Append `run` to its schedule's history."""
        with file_lock(self._history / ".lock"):
            self._write_history(run.schedule, [*self.history(run.schedule), run])

    def update(self, run: ScheduleRun) -> None:
        """Replace the recorded fire with `run`'s run id by `run` (appended if it is not there)."""
        with file_lock(self._history / ".lock"):
            runs = self.history(run.schedule)
            at = next((i for i, r in enumerate(runs) if run.run_id and r.run_id == run.run_id), len(runs))
            self._write_history(run.schedule, [*runs[:at], run, *runs[at + 1:]])

    def _write_history(self, name: str, runs: builtins.list[ScheduleRun]) -> None:
        payload = {"runs": [_run_to_json(r) for r in runs]}
        atomic_write(self._history / f"{name}.json", json.dumps(payload, indent=2) + "\n")

    def _write(self, items: builtins.list[Any]) -> None:
        """Rewrite schedules.json with `items`: the named entries sorted by name, then the others as they were."""
        def order(item: Any) -> tuple[int, str]:
            name = item.get("name") if isinstance(item, dict) else None
            return (0, name) if isinstance(name, str) else (1, "")
        atomic_write(self._file, json.dumps({"schedules": sorted(items, key=order)}, indent=2) + "\n")


def _why(exc: Exception) -> str:
    """What is wrong with a stored file, in words (a KeyError alone says only the key)."""
    return f"no {exc.args[0]!r} field" if isinstance(exc, KeyError) else str(exc)


def _to_json(schedule: Schedule) -> dict[str, Any]:
    data = asdict(schedule)
    data["project"] = str(schedule.project)
    data["created"] = schedule.created.isoformat() if schedule.created else None
    return data


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value else None


def _run_to_json(run: ScheduleRun) -> dict[str, Any]:
    data = asdict(run)
    for key in ("fired_at", "scheduled_for", "ended_at"):
        data[key] = data[key].isoformat() if data[key] else None
    return data


def _run_from_json(item: dict[str, Any]) -> ScheduleRun:
    return ScheduleRun(
        schedule=str(item["schedule"]),
        run_id=item.get("run_id"),
        fired_at=datetime.fromisoformat(str(item["fired_at"])),
        outcome=str(item["outcome"]),
        scheduled_for=_when(item.get("scheduled_for")),
        ended_at=_when(item.get("ended_at")),
        exit_code=item.get("exit_code"),
        error=str(item.get("error") or ""),
        pid=item.get("pid"),
    )


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
        created=_when(item.get("created")),
        notify=str(item.get("notify") or ""),
        runner=str(item.get("runner") or ""),
    )
