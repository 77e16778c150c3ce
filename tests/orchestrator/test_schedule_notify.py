"""`schedule add --notify`: a fire's end queued as one line for an integration's chat, from a real scheduler fire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.conversations import ConversationStore
from orchestrator.schedule_notices import NOTICE_LIMIT
from orchestrator.scheduler import Scheduler
from orchestrator.schedules import Schedule, ScheduleError, validate
from tests._fake_clock import Clock
from tests.orchestrator import test_scheduler as base

pytestmark = pytest.mark.e2e
store = base.store  # the scheduler tests' fixture: a data folder and a config folder of its own
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def _schedule(project: Path, name: str, task: str, notify: str = "") -> Schedule:
    return Schedule(name=name, cron="0 9 * * *", project=project, role="orchestrator", task=task, timezone="UTC",
                    created=T0, notify=notify)


def test_a_fire_s_end_is_queued_for_the_integration_with_its_summary(project, store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    store.add(_schedule(project.root, "nightly", "echo:all green\nthe second line", "strawpot-telegram:42"))
    store.add(_schedule(project.root, "long", "echo:" + "x" * 2000, "strawpot-slack"))
    store.add(_schedule(project.root, "quiet", "echo:nobody hears"))
    store.add(_schedule(tmp_path / "gone", "broken", "echo:x", "strawpot-telegram:42"))
    said: list[str] = []
    scheduler = Scheduler(store, now=Clock(T0 + timedelta(hours=1, seconds=2)), say=said.append)
    scheduler.tick()
    scheduler.wait_idle()
    [nightly] = store.history("nightly")
    assert nightly.outcome == "succeeded", said
    notes = ConversationStore(tmp_path / "data")
    telegram = notes.pending("strawpot-telegram")
    assert sorted((n.chat_id, n.message) for n in telegram) == sorted([
        ("42", f"schedule nightly: run {nightly.run_id} succeeded (exit code 0): all green"),
        ("42", f"schedule broken: run - failed: project folder {tmp_path / 'gone'} does not exist: create it or "
               "remove the schedule"),
    ])
    [long] = notes.pending("strawpot-slack")
    assert long.chat_id == "" and "\n" not in long.message
    assert long.message.endswith("x …") and len(long.message) < NOTICE_LIMIT + 100
    assert notes.pending("") == [], "a schedule without --notify tells nobody"


@pytest.mark.parametrize("notify", ["Telegram", "strawpot telegram", "slack:C1\nforged line", "-x:1"])
def test_a_bad_notify_target_is_refused_when_stored(tmp_path: Path, notify: str) -> None:
    with pytest.raises(ScheduleError, match="invalid --notify"):
        validate(_schedule(tmp_path, "nightly", "echo:x", notify), T0)
