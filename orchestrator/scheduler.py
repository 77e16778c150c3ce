"""The one scheduler: which schedules are due, each fire as a headless `strawpot start`, and the lock that keeps it one."""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from orchestrator.headless import first_error, headless_args, strawpot_command
from orchestrator.orphans import owner_alive, pid_alive
from orchestrator.run_record import RunRecord, RunRecordBroken, find_run
from orchestrator.schedule_notices import send_notice
from orchestrator.scheduler_lock import SchedulerLock, held_message
from orchestrator.schedules import (
    RUNNERS,
    RUNNING,
    Schedule,
    ScheduleError,
    ScheduleRun,
    ScheduleStore,
    check_name,
    last_fire,
    next_fire,
    next_fire_line,
    shown_name,
    valid_name,
)
from orchestrator.session import State, new_run_id
from strawpot.model.display import terminal_safe
from strawpot.model.layout import Project
from strawpot.model.plural import count
from strawpot.model.settings import SCHEMA

CATCH_UP = SCHEMA["schedule.catch_up"].choices  # none | latest
GRACE = timedelta(seconds=60)  # a fire time at most this old is on time; an older one was missed
POLL = 30.0  # seconds between two looks at the store at most, so added and removed schedules are seen
MISSED_LIMIT = 10_000  # missed fire times counted at most (a minutely cron left a year)
SKIPPED, MISSED = "skipped", "missed"


def utc_now() -> datetime:
    return datetime.now(UTC)


def serve_in_background(data_dir: Path, catch_up: str, say: Callable[[str], None],
                        max_parallel: int | None = None) -> Scheduler | None:
    """`strawpot ui`'s scheduler: a daemon thread serving `data_dir` while the process lives, if it gets the lock."""
    lock = SchedulerLock(data_dir)
    try:
        holder = lock.acquire()
    except OSError as exc:  # the pages do not need the data folder: say why there is no scheduling, go on
        say(f"schedules: cannot lock {lock.path}: {exc.strerror or exc}; this UI does not fire them")
        return None
    if holder is not None:
        say(f"schedules: {held_message(holder, data_dir)}; this UI does not fire them")
        return None
    scheduler = Scheduler(ScheduleStore(data_dir), catch_up=catch_up, say=say, max_parallel=max_parallel)
    threading.Thread(target=_serve_holding, args=(scheduler, lock), daemon=True, name="scheduler").start()
    return scheduler


def _serve_holding(scheduler: Scheduler, lock: SchedulerLock) -> None:
    """Serve while `lock` stays referenced, so its file stays open (and flocked) for as long as the thread lives:
    a lock nothing refers to is collected, and closing its file would let a second scheduler in."""
    try:
        scheduler.serve()
    finally:
        lock.release()


@dataclass(frozen=True)
class Due:
    """What one schedule wants at a tick: fire for `at` (or only record), and how many earlier fires were missed."""

    schedule: Schedule
    at: datetime
    fire: bool
    missed: int = 0
    missed_last: datetime | None = None


def _fire_times(schedule: Schedule, after: datetime, until: datetime) -> tuple[int, datetime | None]:
    """How many fire times fall in (after, until] (counted up to MISSED_LIMIT + 1), and the latest of them."""
    latest = last_fire(schedule, until)
    if latest is None or latest <= after:
        return 0, None
    found, at = 0, next_fire(schedule, after)
    while at is not None and at <= latest and found <= MISSED_LIMIT:
        found += 1
        at = next_fire(schedule, at)
    return found, latest


def precheck(schedule: Schedule) -> str:
    """Why `schedule` cannot start a session, found without starting one ("" when nothing is wrong here)."""
    if not schedule.project.is_dir():
        return f"project folder {schedule.project} does not exist: create it or remove the schedule"
    if not Project(schedule.project).lock_path.is_file():
        return f"no strawpot.lock in {schedule.project}: run `strawpot lock` there"
    if schedule.runner not in ("", *RUNNERS):
        return f"unknown runner {schedule.runner!r} in {shown_name(schedule.name)}: use one of {', '.join(RUNNERS)}"
    return ""


def session_of(schedule: Schedule, run: ScheduleRun) -> RunRecord | None:
    """The record of the session `run` started, or None if none began (or its record is unreadable)."""
    try:
        return find_run(Project(schedule.project).sessions_dir, run.run_id) if run.run_id else None
    except RunRecordBroken:
        return None


def session_end(schedule: Schedule, run: ScheduleRun, code: int | None, error: str, ended: datetime) -> ScheduleRun:
    """`run` as it ended: the session's own state and exit code, else (no session began) failed with `error`."""
    record = session_of(schedule, run)
    if record is None:
        return replace(run, outcome=State.FAILED.value, ended_at=ended, exit_code=code, pid=None,
                       error=error or "strawpot start ended before the session began")
    state = str(record.state)
    if state == State.RUNNING and not owner_alive(record):
        state, error = State.FAILED.value, error or "its strawpot start process died"
    exit_code = code if code is not None else record.exit_code
    return replace(run, outcome=state, ended_at=ended, exit_code=exit_code, pid=None,
                   error=error if state != State.SUCCEEDED else "")


def _alive(run: ScheduleRun) -> bool:
    """Whether `run`'s `strawpot start` still runs: its pid is alive and, where /proc tells, still names the run
    (a pid the system gave to another process since must not hold the schedule back for ever)."""
    if not pid_alive(run.pid):
        return False
    try:
        cmdline = Path(f"/proc/{run.pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc on this system: the pid is all there is
    except OSError:
        return True
    return str(run.run_id).encode() in cmdline.split(b"\0")


def still_running(store: ScheduleStore, name: str) -> ScheduleRun | None:
    """The recorded run of `name` whose `strawpot start` is still alive, if any."""
    return next((run for run in reversed(store.history(name)) if run.outcome == RUNNING and _alive(run)), None)


def settle(store: ScheduleStore, name: str, now: datetime) -> list[ScheduleRun]:
    """Complete the entries left `running` by a scheduler that stopped before its runs ended; the history then."""
    schedule = store.get(name)
    for run in store.history(name):
        if run.outcome != RUNNING or _alive(run):
            continue
        if run.pid is None and now - run.fired_at < GRACE:
            continue  # recorded a moment ago; its process is being started
        if schedule is None:
            store.update(replace(run, outcome="unknown", pid=None,
                                 error="the scheduler stopped before the run ended, and the schedule is gone"))
        else:
            store.update(session_end(schedule, run, None, "", now))
    return store.history(name)


class Scheduler:
    """Fires due schedules from `store`; time comes from `now` and passes by `sleep`, both injectable for tests."""

    def __init__(self, store: ScheduleStore, *, catch_up: str = "none", command: list[str] | None = None,
                 now: Callable[[], datetime] = utc_now, sleep: Callable[[float], object] | None = None,
                 say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
                 detach: bool = True, announce: bool = False, max_parallel: int | None = None) -> None:
        if catch_up not in CATCH_UP:
            raise ScheduleError(f"invalid catch_up {catch_up!r}: use one of {', '.join(CATCH_UP)}")
        self.store = store
        self.catch_up = catch_up
        self.command = command or strawpot_command()
        self.now = now
        self._stop = threading.Event()
        self.sleep = sleep or self._stop.wait
        self._say = say
        self.detach = detach  # fired sessions in a process group of their own: Ctrl-C on the scheduler spares them
        self.announce = announce  # say a schedule's next fire after each time it is acted on (`schedule serve`)
        self._cursor: dict[str, datetime] = {}
        self._queued: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._warned: set[tuple[str, str]] = set()  # (schedule, problem) said already
        self._guard = threading.Lock()
        # fires in flight at most (`[runner] max_parallel`); the others wait for a slot before they are recorded
        self._slots = threading.BoundedSemaphore(max_parallel or int(SCHEMA["runner.max_parallel"].default))

    def say(self, line: str) -> None:
        """One line to the user; made inert, since it carries start's errors, which quote package text."""
        self._say(terminal_safe(line))

    # -- what is due ---------------------------------------------------------------------------------------------

    def _since(self, schedule: Schedule, now: datetime) -> datetime:
        """The time up to which `schedule` was dealt with: its last recorded fire time, else when it was added."""
        created = schedule.created if schedule.created and schedule.created <= now else None
        if schedule.name not in self._cursor:
            times = [r.scheduled_for for r in self.store.history(schedule.name) if r.scheduled_for is not None]
            known = [t for t in times if t <= now]
            self._cursor[schedule.name] = max(known) if known else created or now
        # a schedule removed and added again under its name owes nothing from before it was added
        return max(self._cursor[schedule.name], created) if created else self._cursor[schedule.name]

    def left_out(self, schedule: Schedule, problem: ScheduleError) -> None:
        """Say (once per problem) why `schedule` does not fire; the other schedules go on."""
        shown = shown_name(schedule.name)
        how = "" if valid_name(schedule.name) else f" (`strawpot schedule remove {shlex.quote(shown)}` removes it)"
        self._once(schedule.name, str(problem), f"schedule {shown}: {problem}; it does not fire until fixed{how}")

    def _once(self, name: str, problem: str, line: str) -> None:
        if (name, problem) not in self._warned:
            self._warned.add((name, problem))
            self.say(line)

    def due(self, now: datetime) -> list[Due]:
        """Every schedule with a fire time in (its cursor, now]: fire for the latest if it is on time (or catch_up
        is `latest`); the older ones are missed. A schedule that cannot be read is said once and left out."""
        found = []
        schedules, unreadable = self.store.read()
        for entry in unreadable:  # the other schedules fire all the same
            said = entry.describe(self.store.file)
            self._once("", said, f"schedules: {said}; it does not fire until fixed")
        for schedule in schedules:
            try:
                check_name(schedule.name)
                since = self._since(schedule, now)
                times, latest = _fire_times(schedule, since, now)
                before = last_fire(schedule, latest - timedelta(microseconds=1)) if latest else None
            except ScheduleError as exc:
                self.left_out(schedule, exc)
                continue
            if latest is None:
                continue
            if now - latest <= GRACE or self.catch_up == "latest":
                found.append(Due(schedule, latest, True, times - 1, before if times > 1 else None))
            else:
                found.append(Due(schedule, latest, False, times, latest))
        return found

    def next_wake(self, now: datetime) -> float:
        """Seconds until the next fire time of any schedule, at most POLL."""
        upcoming = []
        for schedule in self.store.list():
            with contextlib.suppress(ScheduleError):
                if (at := next_fire(schedule, now)) is not None:
                    upcoming.append((at - now).total_seconds())
        return max(0.01, min([POLL, *upcoming]))

    # -- firing --------------------------------------------------------------------------------------------------

    def tick(self) -> list[ScheduleRun]:
        """Act on everything due now: record missed and skipped fires, start the others; what was recorded."""
        now = self.now()
        recorded = []
        self._threads = [t for t in self._threads if t.is_alive()]
        for due in self.due(now):
            try:
                recorded += self._act(due, now)
            except ScheduleError as exc:  # its history became unreadable since `due` read it
                self.left_out(due.schedule, exc)
        return recorded

    def _act(self, due: Due, now: datetime) -> list[ScheduleRun]:
        name = due.schedule.name
        self._cursor[name] = due.at
        recorded = []
        if due.missed:
            more = " or more" if due.missed > MISSED_LIMIT else ""
            why = (f"{count(due.missed, 'fire time')}{more} passed while no scheduler ran "
                   f"(catch_up = {self.catch_up})")
            recorded.append(self._record(ScheduleRun(name, None, now, MISSED, scheduled_for=due.missed_last,
                                                     error=why)))
        if due.fire:
            recorded += self._start(due.schedule, due.at, now)
        if self.announce:
            self.say(next_fire_line(due.schedule, now))
        return recorded

    def _record(self, run: ScheduleRun) -> ScheduleRun:
        self.store.record(run)
        self.say(f"schedule {run.schedule}: {run.outcome} ({run.error})")
        return run

    def _start(self, schedule: Schedule, at: datetime, now: datetime) -> list[ScheduleRun]:
        name = schedule.name
        with self._guard:
            previous = self._previous(name)
            if previous and schedule.overlap != "parallel":
                if schedule.overlap == "skip" or name in self._queued:
                    why = (f"a fire is already queued behind {previous}" if name in self._queued
                           else f"{previous} still runs") + f" (overlap = {schedule.overlap})"
                    return [self._record(ScheduleRun(name, None, now, SKIPPED, scheduled_for=at, error=why))]
                self._queued.add(name)
        thread = threading.Thread(target=self._fire_after, args=(schedule, at, bool(previous)), daemon=True,
                                  name=f"schedule-{name}")
        self._threads.append(thread)
        thread.start()
        return []

    def _previous(self, name: str, *, besides: threading.Thread | None = None) -> str:
        """The earlier fire of `name` still running (this process's, or any recorded one alive), as words; or ""."""
        if (run := still_running(self.store, name)) is not None:
            return f"the previous run {run.run_id}"
        mine = [t for t in self._threads if t.name == f"schedule-{name}" and t.is_alive() and t is not besides]
        return "the previous fire" if mine else ""

    def _fire_after(self, schedule: Schedule, at: datetime, queued: bool) -> None:
        if queued and schedule.overlap == "queue":
            me = threading.current_thread()
            while self._previous(schedule.name, besides=me) and not self._stop.wait(0.2):
                pass
            with self._guard:
                self._queued.discard(schedule.name)
            if self._stop.is_set():
                return
        while not self._slots.acquire(timeout=0.2):
            if self._stop.is_set():
                return
        try:
            self.fire(schedule, at)
        except (ScheduleError, OSError) as exc:  # the data folder went away or unreadable under a fire
            self.say(f"schedule {schedule.name}: {getattr(exc, 'message', None) or exc}")
        finally:
            self._slots.release()

    def fire(self, schedule: Schedule, scheduled_for: datetime | None = None,
             stdout: int | None = subprocess.DEVNULL) -> ScheduleRun:
        """Run `schedule` once as a headless session and wait for it; its history entry, recorded before the
        session starts (`running`) and completed at its end."""
        now = self.now()
        if problem := precheck(schedule):
            return self._notify(schedule, self._record(ScheduleRun(
                schedule.name, None, now, State.FAILED.value, scheduled_for=scheduled_for, ended_at=now, error=problem)))
        run = ScheduleRun(schedule.name, new_run_id(), now, RUNNING, scheduled_for=scheduled_for)
        self.store.record(run)
        args = headless_args(self.command, str(run.run_id), schedule.project, schedule.task, role=schedule.role,
                             params=schedule.params, runner=schedule.runner)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
            try:
                proc = subprocess.Popen(args, cwd=schedule.project, stdin=subprocess.DEVNULL, stdout=stdout,
                                        stderr=err, start_new_session=self.detach)
            except OSError as exc:
                ended = replace(run, outcome=State.FAILED.value, ended_at=self.now(),
                                error=f"cannot run {args[0]}: {exc.strerror or exc}")
                self.store.update(ended)
                return self._notify(schedule, ended)
            started = replace(run, pid=proc.pid)
            self.store.update(started)
            self.say(f"schedule {schedule.name}: started run {run.run_id}")
            interrupted = False
            try:
                code = proc.wait()
            except KeyboardInterrupt:  # `schedule run`'s Ctrl-C reached the session too: let it stop, then record
                interrupted, code = True, proc.wait()
            err.seek(0)
            error = first_error(err.read())
            if re.fullmatch(rf"run {run.run_id} \w+ \(exit code -?\d+\)", error):
                error = ""  # `start`'s own end line: the outcome and exit code say it already, no reason to add
        ended = session_end(schedule, started, code, error if code else "", self.now())
        self.store.update(ended)
        self._notify(schedule, ended)
        if interrupted:
            raise KeyboardInterrupt
        tail = f": {ended.error}" if ended.error else ""
        self.say(f"schedule {schedule.name}: run {ended.run_id} {ended.outcome} "
                 f"(exit code {ended.exit_code}){tail}")
        return ended

    def _notify(self, schedule: Schedule, ended: ScheduleRun) -> ScheduleRun:
        """Queue the notice of `ended` for the integration the schedule names (`--notify`), if any."""
        record = session_of(schedule, ended)
        if problem := send_notice(self.store.data_dir, schedule, ended, record.summary if record else ""):
            self.say(f"schedule {schedule.name}: {problem}")
        return ended

    # -- the loop ------------------------------------------------------------------------------------------------

    def serve(self) -> None:
        """Tick, then sleep until the next fire time (or POLL), until `stop()`."""
        said = ""
        while not self._stop.is_set():
            try:
                for schedule in self.store.list():  # entries a stopped scheduler or a killed run left `running`
                    self._settle(schedule)
                self.tick()
                said = ""
                wake = self.next_wake(self.now())
            except (ScheduleError, OSError) as exc:  # a store edited into nonsense, or that cannot be written:
                problem = str(exc)  # said once, tried again until fixed (the UI's scheduler thread must not die)
                if problem != said:
                    self.say(f"schedules: {problem}")
                said, wake = problem, POLL
            self.sleep(wake)

    def _settle(self, schedule: Schedule) -> None:
        try:
            check_name(schedule.name)
            settle(self.store, schedule.name, self.now())
        except ScheduleError as exc:  # one schedule's bad name or history: the others are still settled
            self.left_out(schedule, exc)

    def stop(self) -> None:
        self._stop.set()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait for every fire started so far to end (tests, and a scheduler told to finish its work)."""
        for thread in list(self._threads):
            thread.join(timeout)

    def busy(self) -> list[str]:
        """Names of schedules with a fire in progress in this process."""
        return sorted({t.name.removeprefix("schedule-") for t in self._threads if t.is_alive()})
