"""The scheduler at an injected clock: real headless sessions of a real locked project, recorded in the history."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from orchestrator.scheduler import Scheduler, SchedulerLock, serve_in_background, settle
from orchestrator.schedules import Schedule, ScheduleRun, ScheduleStore
from tests._fake_clock import Clock

pytestmark = pytest.mark.e2e
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)  # a Monday


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScheduleStore:
    """A data folder of its own; `strawpot start` children get a global config folder of their own too."""
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(config))
    monkeypatch.setenv("STRAWPOT_DATA_DIR", str(tmp_path / "data"))
    return ScheduleStore(tmp_path / "data")


def _schedule(project: Path, name: str = "triage", cron: str = "0 9 * * *", task: str = "echo:triaged",
              overlap: str = "skip", created: datetime = T0) -> Schedule:
    return Schedule(name=name, cron=cron, project=project, role="orchestrator", task=task, timezone="UTC",
                    overlap=overlap, created=created)


def _session(project_root: Path, run_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((project_root / ".strawpot" / "sessions" / run_id / "session.json").read_text())
    return data


def _wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_schedule_fires_at_its_time_as_a_headless_session_recorded_in_history(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    store.add(_schedule(project.root))
    clock = Clock(T0 + timedelta(minutes=59, seconds=50))  # 08:59:50: ten seconds early
    scheduler = Scheduler(store, now=clock, sleep=clock.sleep, say=lambda line: None)
    assert scheduler.tick() == [] and store.history("triage") == []

    def sleep(seconds: float) -> None:  # the loop's second sleep (after the 09:00 look) is its last
        clock.sleep(seconds)
        if len(clock.slept) == 2:
            scheduler.stop()

    scheduler.sleep = sleep
    scheduler.serve()
    assert clock.slept == [pytest.approx(10.0), 30.0]  # straight to 09:00; then a look at the store every 30 s
    scheduler.wait_idle()
    [run] = store.history("triage")
    assert run.scheduled_for == T0 + timedelta(hours=1) and run.fired_at == T0 + timedelta(hours=1)
    assert (run.outcome, run.exit_code, run.error, run.pid) == ("succeeded", 0, "", None)
    session = _session(project.root, str(run.run_id))
    assert session["state"] == "succeeded" and session["task"] == "echo:triaged" and session["role"] == "orchestrator"
    assert session["inputs"], "the session records what it ran from"


def test_history_says_running_with_the_run_id_before_the_session_ends(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    go = project.root.parent / "go"  # the session's agent waits for it: running until the test has looked
    store.add(_schedule(project.root, task=f"wait-for:{go} then echo:done"))
    clock = Clock(T0 + timedelta(hours=1, seconds=1))
    scheduler = Scheduler(store, now=clock, say=lambda line: None)
    scheduler.tick()
    _wait_for(lambda: bool(store.history("triage")))
    [running] = store.history("triage")
    assert running.outcome == "running" and running.run_id  # recorded before the session starts
    _wait_for(lambda: (project.sessions_dir / str(running.run_id) / "session.json").exists())
    assert _session(project.root, str(running.run_id))["state"] == "running"  # the UI can link it while it runs
    assert store.history("triage")[0].pid
    go.touch()
    scheduler.wait_idle()
    [ended] = store.history("triage")
    assert (ended.run_id, ended.outcome) == (running.run_id, "succeeded")


def test_overlap_skip_records_the_fire_that_came_while_the_previous_ran(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    go = project.root.parent / "go"  # the first run's agent waits for it: still running at the next fire
    store.add(_schedule(project.root, cron="* * * * *", task=f"wait-for:{go}"))
    clock = Clock(T0 + timedelta(minutes=1))
    scheduler = Scheduler(store, now=clock, say=lambda line: None)
    scheduler.tick()
    _wait_for(lambda: any(r.pid for r in store.history("triage")))
    clock.at += timedelta(minutes=1)
    [skipped] = scheduler.tick()
    go.touch()
    scheduler.wait_idle()
    first, recorded = store.history("triage")
    assert recorded == skipped and first.outcome == "succeeded"
    assert (skipped.outcome, skipped.run_id, skipped.scheduled_for) == ("skipped", None, T0 + timedelta(minutes=2))
    assert skipped.error == f"the previous run {first.run_id} still runs (overlap = skip)"
    assert len(list(project.sessions_dir.iterdir())) == 1


def test_overlap_queue_starts_the_next_fire_when_the_previous_ends(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    go = project.root.parent / "go"  # the first run's agent waits for it: still running at the next fire
    store.add(_schedule(project.root, cron="* * * * *", task=f"wait-for:{go}", overlap="queue"))
    clock = Clock(T0 + timedelta(minutes=1))
    scheduler = Scheduler(store, now=clock, say=lambda line: None)
    scheduler.tick()
    _wait_for(lambda: any(r.pid for r in store.history("triage")))
    clock.at += timedelta(minutes=1)
    assert scheduler.tick() == []  # queued, not skipped
    time.sleep(0.5)
    assert len(store.history("triage")) == 1  # not started beside the first, which cannot have ended
    go.touch()
    scheduler.wait_idle()
    first, second = store.history("triage")
    assert [first.outcome, second.outcome] == ["succeeded", "succeeded"]
    assert second.scheduled_for == T0 + timedelta(minutes=2)
    one, two = (_session(project.root, str(r.run_id)) for r in (first, second))
    assert float(two["started_at"]) >= float(one["ended_at"])  # type: ignore[arg-type]


def test_overlap_parallel_starts_the_next_fire_beside_the_previous(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    go = project.root.parent / "go"  # both runs' agents wait for it: the test makes it once both run
    store.add(_schedule(project.root, cron="* * * * *", task=f"wait-for:{go}", overlap="parallel"))
    clock = Clock(T0 + timedelta(minutes=1))
    scheduler = Scheduler(store, now=clock, say=lambda line: None)
    scheduler.tick()
    _wait_for(lambda: any(r.pid for r in store.history("triage")))
    clock.at += timedelta(minutes=1)
    assert scheduler.tick() == []
    _wait_for(lambda: len(list(project.sessions_dir.glob("*/session.json"))) == 2)
    go.touch()
    scheduler.wait_idle()
    first, second = store.history("triage")
    assert [first.outcome, second.outcome] == ["succeeded", "succeeded"]
    one, two = (_session(project.root, str(r.run_id)) for r in (first, second))
    assert float(two["started_at"]) < float(one["ended_at"])  # type: ignore[arg-type]


def test_a_schedule_removed_and_added_again_owes_nothing_from_before(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store.add(_schedule(tmp_path, cron="0 * * * *"))  # hourly
    store.record(ScheduleRun("triage", "run-1", T0, "succeeded", scheduled_for=T0))  # fired at 08:00
    scheduler = Scheduler(store, catch_up="latest", say=lambda line: None)
    assert [d.at for d in scheduler.due(T0 + timedelta(minutes=5))] == []
    store.remove("triage")  # at 08:10; added again at 09:30: 09:00 passed before it existed
    store.add(_schedule(tmp_path, cron="0 * * * *", created=T0 + timedelta(minutes=90)))
    assert scheduler.due(T0 + timedelta(minutes=95)) == []
    [due] = scheduler.due(T0 + timedelta(hours=2, seconds=3))
    assert (due.at, due.fire, due.missed) == (T0 + timedelta(hours=2), True, 0)


@pytest.mark.parametrize("catch_up", ["none", "latest"])
def test_fires_missed_while_nothing_served_follow_catch_up(project, store, catch_up: str) -> None:  # type: ignore[no-untyped-def]
    project.build()
    store.add(_schedule(project.root, created=datetime(2026, 1, 1, 0, 0, tzinfo=UTC)))
    clock = Clock(datetime(2026, 1, 4, 12, 0, tzinfo=UTC))  # 09:00 on the 1st, 2nd, 3rd and 4th have passed
    scheduler = Scheduler(store, catch_up=catch_up, now=clock, say=lambda line: None)
    recorded = scheduler.tick()
    scheduler.wait_idle()
    if catch_up == "none":
        assert recorded == [ScheduleRun("triage", None, clock.at, "missed",
                                        scheduled_for=datetime(2026, 1, 4, 9, 0, tzinfo=UTC),
                                        error="4 fire times passed while no scheduler ran (catch_up = none)")]
        assert not project.sessions_dir.exists()
    else:
        assert [r.error for r in recorded] == ["3 fire times passed while no scheduler ran (catch_up = latest)"]
        assert recorded[0].scheduled_for == datetime(2026, 1, 3, 9, 0, tzinfo=UTC)
        fired = store.history("triage")[-1]
        assert fired.outcome == "succeeded" and fired.scheduled_for == datetime(2026, 1, 4, 9, 0, tzinfo=UTC) and fired.run_id
    # A scheduler started later over the same store owes nothing for those times: the history is its cursor.
    clock.at += timedelta(minutes=30)
    assert Scheduler(store, catch_up=catch_up, now=clock, say=lambda line: None).tick() == []


def test_a_broken_project_is_recorded_as_failed_and_the_others_still_fire(project, store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project.build()
    tampered = tmp_path / "tampered"
    project.root.rename(tampered)  # the same locked project, now with one installed file changed
    skill = tampered / ".strawpot" / "skills" / "coding" / "SKILL.md"
    skill.write_text(skill.read_text().replace("wisely", "BADLY!"))
    project.build()  # a good one again at the old place
    unlocked = tmp_path / "unlocked"
    unlocked.mkdir()
    (unlocked / "strawpot.toml").write_text("[roles]\n")
    for name, where in (("good", project.root), ("tampered", tampered), ("unlocked", unlocked),
                        ("gone", tmp_path / "gone")):
        store.add(_schedule(where, name=name))
    said: list[str] = []
    scheduler = Scheduler(store, now=Clock(T0 + timedelta(hours=1, seconds=2)), say=said.append)
    scheduler.tick()
    scheduler.wait_idle()
    [good], [bad], [unlocked_run], [gone] = (store.history(n) for n in ("good", "tampered", "unlocked", "gone"))
    assert good.outcome == "succeeded"
    assert (bad.outcome, bad.exit_code) == ("failed", 5)
    assert bad.error.startswith("the installed packages do not match strawpot.lock: skill coding: SKILL.md: "
                                "content differs from the lock (sha256)")
    assert not (tampered / ".strawpot" / "sessions").exists()  # the session refused before it began
    assert (unlocked_run.outcome, unlocked_run.run_id) == ("failed", None)
    assert unlocked_run.error == f"no strawpot.lock in {unlocked}: run `strawpot lock` there"
    assert gone.error == f"project folder {tmp_path / 'gone'} does not exist: create it or remove the schedule"
    assert all("\n" not in r.error for r in (bad, unlocked_run, gone))
    assert any(line.startswith("schedule tampered: run ") and "failed (exit code 5)" in line for line in said)


def test_the_lock_admits_one_scheduler_and_names_the_pid_holding_it(tmp_path: Path) -> None:
    first, second = SchedulerLock(tmp_path), SchedulerLock(tmp_path)
    assert first.acquire() is None
    assert second.acquire() == os.getpid()
    first.release()
    assert second.acquire() is None
    second.release()


def test_due_reads_cron_in_the_schedules_zone_across_a_dst_change(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    paris = ZoneInfo("Europe/Paris")
    store.add(Schedule(name="night", cron="30 2 * * *", project=tmp_path, role="r", task="t",
                       timezone="Europe/Paris", created=datetime(2026, 3, 28, 12, 0, tzinfo=paris)))
    scheduler = Scheduler(store, say=lambda line: None)
    assert scheduler.due(datetime(2026, 3, 29, 0, 59, tzinfo=UTC)) == []  # 01:59 in Paris, before the change
    [due] = scheduler.due(datetime(2026, 3, 29, 1, 0, 30, tzinfo=UTC))  # 03:00:30 CEST: 02:30 does not exist
    assert (due.at, due.fire, due.missed) == (datetime(2026, 3, 29, 3, 0, tzinfo=paris), True, 0)
    assert due.at.utcoffset() == timedelta(hours=2)


def test_a_schedule_added_while_serving_is_seen_and_a_broken_one_said_once(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    clock = Clock(T0)
    said: list[str] = []
    scheduler = Scheduler(store, now=clock, say=said.append)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 1:  # while the loop sleeps, someone adds schedules
            store.add(_schedule(tmp_path, name="later", cron="0 9 * * *"))
            raw = json.loads((store.data_dir / "schedules.json").read_text())
            raw["schedules"].append({**raw["schedules"][0], "name": "broken", "cron": "61 * * * *"})
            (store.data_dir / "schedules.json").write_text(json.dumps(raw))
        if len(clock.slept) == 3:
            scheduler.stop()

    scheduler.sleep = sleep
    scheduler.serve()
    # 30 s with nothing stored; then 30 s again (looks every 30 s at most) though 'later' fires at 09:00
    assert clock.slept == [30.0, 30.0, 30.0]
    assert said == ["schedule broken: invalid cron expression '61 * * * *': Bad minute; it does not fire until fixed"]
    assert scheduler.next_wake(T0 + timedelta(minutes=59, seconds=45)) == pytest.approx(15.0)


def test_a_run_left_running_by_a_stopped_scheduler_is_settled_not_waited_for(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store.add(_schedule(tmp_path))
    # Its pid now belongs to another process (this one), which is not a `strawpot start` of that run.
    left = ScheduleRun("triage", "run_20260105_090000_abcdef", T0, "running", scheduled_for=T0, pid=os.getpid())
    store.record(left)
    scheduler = Scheduler(store, now=Clock(T0 + timedelta(hours=1, seconds=1)), say=lambda line: None)
    assert scheduler._previous("triage") == ""  # does not hold the next fire back
    [settled] = settle(store, "triage", T0 + timedelta(hours=1))
    assert (settled.run_id, settled.outcome, settled.pid) == (left.run_id, "failed", None)
    assert settled.error == "strawpot start ended before the session began"  # no run folder was ever written


def test_the_ui_without_a_usable_data_folder_says_so_and_schedules_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be")
    said: list[str] = []
    assert serve_in_background(data, "none", said.append) is None
    assert said == [f"schedules: cannot lock {data / 'scheduler.lock'}: File exists; this UI does not fire them"]


def test_a_history_that_cannot_be_written_is_said_and_the_scheduler_goes_on(store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store.add(_schedule(tmp_path))  # 09:00 daily since T0; at T0 + 3 days two fires were missed
    (store.data_dir / "schedule-history" / ".lock").mkdir(parents=True)  # the history's lock cannot be opened
    clock = Clock(T0 + timedelta(days=2, hours=2))
    said: list[str] = []
    scheduler = Scheduler(store, now=clock, say=said.append)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 2:
            scheduler.stop()

    scheduler.sleep = sleep
    scheduler.serve()  # the `strawpot ui` thread: it must not die of it
    assert clock.slept == [30.0, 30.0]
    assert len(said) == 1 and said[0].startswith("schedules: ") and "Is a directory" in said[0], said


def test_a_bad_stored_name_or_cron_or_a_corrupt_history_stops_only_its_own_schedule(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    for name in ("good", "torn"):
        store.add(_schedule(project.root, name=name))
    torn = store.data_dir / "schedule-history" / "torn.json"
    torn.parent.mkdir(parents=True)
    torn.write_text("{not json")
    raw = json.loads((store.data_dir / "schedules.json").read_text())  # edited by hand, or by an older strawpot
    good = raw["schedules"][0]
    raw["schedules"] += [{**good, "name": "Bad Name"}, {**good, "name": "nightly\n"},
                         {**good, "name": "every-second", "cron": "* * * * * *"}]
    (store.data_dir / "schedules.json").write_text(json.dumps(raw))
    clock = Clock(T0 + timedelta(hours=1, seconds=2))  # 09:00:02: every one of them is due
    said: list[str] = []
    scheduler = Scheduler(store, now=clock, say=said.append)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 2:
            scheduler.stop()

    scheduler.sleep = sleep
    scheduler.serve()
    scheduler.wait_idle()
    [fired] = store.history("good")
    assert fired.outcome == "succeeded"
    assert torn.read_text() == "{not json"  # left for the user to fix, not overwritten
    problems = [line for line in said if not line.startswith("schedule good: ")]
    assert sorted(problems) == [  # each said once, in one line, the others firing all the same
        "schedule Bad Name: invalid schedule name 'Bad Name': use lowercase letters, digits, '.', '_' or '-'; it "
        "does not fire until fixed (`strawpot schedule remove 'Bad Name'` removes it)",
        "schedule every-second: invalid cron expression '* * * * * *': use five fields (minute hour day-of-month "
        "month day-of-week), not 6; it does not fire until fixed",
        "schedule nightly\\n: invalid schedule name 'nightly\\n': use lowercase letters, digits, '.', '_' or '-'; "
        "it does not fire until fixed (`strawpot schedule remove 'nightly\\n'` removes it)",
        f"schedule torn: cannot read the history of 'torn': Expecting property name enclosed in double quotes: "
        f"line 1 column 2 (char 1); fix or remove {torn}; it does not fire until fixed",
    ], said


def test_max_parallel_holds_fires_past_it_until_a_slot_frees(project, store) -> None:  # type: ignore[no-untyped-def]
    project.build()
    go = project.root.parent / "go"  # the agents wait for it: none can end before the test has looked
    for name in ("one", "two", "three"):
        store.add(_schedule(project.root, name=name, task=f"wait-for:{go}"))
    clock = Clock(T0 + timedelta(hours=1, seconds=1))
    scheduler = Scheduler(store, now=clock, say=lambda line: None, max_parallel=2)
    scheduler.tick()
    _wait_for(lambda: sum(bool(store.history(n)) for n in ("one", "two", "three")) == 2)
    _wait_for(lambda: len(list(project.sessions_dir.glob("*/session.json"))) == 2)  # both run
    time.sleep(0.5)
    assert sum(bool(store.history(n)) for n in ("one", "two", "three")) == 2  # the third waits, not even recorded
    go.touch()
    scheduler.wait_idle()
    runs = [store.history(n)[0] for n in ("one", "two", "three")]
    assert [r.outcome for r in runs] == ["succeeded"] * 3
    spans = sorted((float(s["started_at"]), float(s["ended_at"]))  # type: ignore[arg-type]
                   for s in (_session(project.root, str(r.run_id)) for r in runs))
    assert spans[2][0] >= min(spans[0][1], spans[1][1])  # the third began once one of them had ended
