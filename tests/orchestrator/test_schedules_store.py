"""The schedule store: round trip through the data folder, fire times by cron + zone, refused input."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.schedules import Schedule, ScheduleError, ScheduleRun, ScheduleStore, next_fire, validate


def _schedule(name: str = "triage", cron: str = "0 9 * * 1-5", tz: str = "Europe/Paris") -> Schedule:
    return Schedule(
        name=name,
        cron=cron,
        project=Path("/srv/project"),
        role="issue-triager",
        task="triage new issues",
        params={"repo": "acme/app"},
        timezone=tz,
        overlap="skip",
    )


def test_store_round_trips_schedules_and_history(tmp_path: Path) -> None:
    store = ScheduleStore(tmp_path / "data")
    assert store.list() == []
    store.add(_schedule("triage"))
    store.add(_schedule("coverage", cron="30 2 * * *"))
    # A fresh store over the same folder reads back exactly what was written.
    again = ScheduleStore(tmp_path / "data")
    assert [s.name for s in again.list()] == ["coverage", "triage"]
    assert again.get("triage") == _schedule("triage")
    with pytest.raises(ScheduleError, match="already exists"):
        again.add(_schedule("triage"))

    fired = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    again.record(ScheduleRun("triage", "run-1", fired, "succeeded"))
    again.record(ScheduleRun("triage", None, fired, "skipped: previous fire still running"))
    assert ScheduleStore(tmp_path / "data").history("triage") == [
        ScheduleRun("triage", "run-1", fired, "succeeded"),
        ScheduleRun("triage", None, fired, "skipped: previous fire still running"),
    ]

    again.remove("triage")
    assert again.get("triage") is None
    assert len(again.history("triage")) == 2
    with pytest.raises(ScheduleError, match="no schedule named"):
        again.remove("triage")


def test_next_fire_honours_the_schedule_zone() -> None:
    # Friday 2026-11-27 09:00 Paris is 08:00 UTC; after it, the next weekday 09:00 is Monday.
    after = datetime(2026, 11, 27, 7, 0, tzinfo=UTC)
    first = next_fire(_schedule(), after)
    assert first is not None and first.astimezone(UTC) == datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
    second = next_fire(_schedule(), first)
    assert second is not None and second.astimezone(UTC) == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (_schedule(cron="not a cron"), "invalid cron expression"),
        (_schedule(cron="0 0 30 2 *"), "invalid cron expression .0 0 30 2 ..: Bad day-of-month"),
        (_schedule(tz="Mars/Olympus"), "unknown timezone"),
        (_schedule(name="Bad Name"), "invalid schedule name"),
        (_schedule(name="triage\n"), "invalid schedule name 'triage\\\\n'"),  # `$` alone matches before a newline
        (_schedule(name="tri\x1bage"), "invalid schedule name"),
        (_schedule(cron="* * * * * *"), r"invalid cron expression '\* \* \* \* \* \*': use five fields .minute hour "
                                       r"day-of-month month day-of-week., not 6"),  # cronsim reads 6 as seconds
    ],
)
def test_bad_schedules_are_refused_with_one_line(schedule: Schedule, message: str) -> None:
    with pytest.raises(ScheduleError, match=message) as caught:
        validate(schedule, datetime(2026, 11, 25, tzinfo=UTC))
    assert "\n" not in str(caught.value)


def test_update_replaces_the_fire_with_the_same_run_id_and_old_entries_still_read(tmp_path: Path) -> None:
    store = ScheduleStore(tmp_path / "data")
    fired = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    store.record(ScheduleRun("triage", None, fired, "missed", error="2 fire times passed"))
    store.record(ScheduleRun("triage", "run-1", fired, "running", scheduled_for=fired))
    store.update(ScheduleRun("triage", "run-1", fired, "succeeded", scheduled_for=fired, exit_code=0))
    assert [(r.run_id, r.outcome) for r in store.history("triage")] == [(None, "missed"), ("run-1", "succeeded")]
    # A history written before fires had times, codes and errors reads back with those empty.
    (tmp_path / "data" / "schedule-history" / "old.json").write_text(
        '{"runs": [{"schedule": "old", "run_id": "run-0", "fired_at": "2026-11-01T08:00:00+00:00", '
        '"outcome": "succeeded"}]}')
    [old] = store.history("old")
    assert (old.run_id, old.scheduled_for, old.exit_code, old.error) == ("run-0", None, None, "")
    with pytest.raises(ScheduleError, match="no schedule named '../old'"):
        store.history("../old")  # a name is never a path


def test_two_adds_at_once_keep_both_schedules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from orchestrator import schedules
    from strawpot.model.fs import atomic_write as real_write

    first_writing, release = threading.Event(), threading.Event()

    def slow_first_write(path: Path, data: str, **kwargs: object) -> None:
        if not first_writing.is_set():  # the first add stops while it writes, holding what it read
            first_writing.set()
            release.wait(5)
        real_write(path, data, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(schedules, "atomic_write", slow_first_write)
    store = ScheduleStore(tmp_path / "data")
    first = threading.Thread(target=store.add, args=(_schedule("first"),))
    first.start()
    assert first_writing.wait(5)
    second = threading.Thread(target=store.add, args=(_schedule("second"),))
    second.start()
    second.join(0.3)  # unguarded, the second add reads the empty store and writes in this time
    release.set()
    first.join(5)
    second.join(5)
    assert [s.name for s in store.list()] == ["first", "second"]


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_schedules_file_planted_as_a_fifo_or_an_endless_link_is_one_line(tmp_path: Path, planted: str) -> None:
    """A cloned repository's `.strawpot/schedules.json` (or a history file) that is a FIFO or a link to /dev/zero is
    refused in one line, not waited on or read without end (a hang fails the test by the suite's timeout)."""
    data = tmp_path / "data"
    (data / "schedule-history").mkdir(parents=True)
    for path in (data / "schedules.json", data / "schedule-history" / "triage.json"):
        if planted == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    store = ScheduleStore(data)
    with pytest.raises(ScheduleError, match="not a regular file"):
        store.list()
    with pytest.raises(ScheduleError, match="not a regular file"):
        store.history("triage")
