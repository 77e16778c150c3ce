"""The schedules page: each stored schedule's cron, zone, next fire and last run (read through ScheduleStore)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.site import ProjectView, Site
from orchestrator.run_record import RunRecordBroken, find_run
from orchestrator.scheduler import settle
from orchestrator.schedules import Schedule, ScheduleError, ScheduleStore, check_name, next_fire, shown_name


@dataclass(frozen=True)
class ScheduleRow:
    schedule: Schedule
    project: ProjectView
    next_fire: str
    last_fired: str
    last_state: str  # the run's own state when its run folder has it, else what the history recorded
    last_run: str | None  # the run page's URL when that run exists in the project
    last_error: str = ""  # the history's one line on why that fire failed, if it says

    @property
    def name(self) -> str:
        """The schedule's name on one line (a stored one with a newline shows it escaped)."""
        return shown_name(self.schedule.name)


def _row(store: ScheduleStore, schedule: Schedule, project: ProjectView, now: datetime) -> ScheduleRow:
    try:
        check_name(schedule.name)  # a stored name edited by hand (or taken by an older strawpot): no history either
    except ScheduleError as exc:
        return ScheduleRow(schedule, project, f"does not fire: {exc}", "-", "-", None)
    try:
        upcoming = next_fire(schedule, now)
        shown = upcoming.strftime("%Y-%m-%d %H:%M %Z") if upcoming else "never"
    except ScheduleError as exc:  # its cron, edited by hand: its past fires are still shown
        shown = f"does not fire: {exc}"
    try:
        history = settle(store, schedule.name, now)  # runs a stopped scheduler left `running` get their end
    except ScheduleError as exc:  # its history file is unreadable: that row says so
        return ScheduleRow(schedule, project, shown, "-", str(exc), None)
    except OSError as exc:
        return ScheduleRow(schedule, project, shown, "-", f"cannot record its history: {exc.strerror or exc}", None)
    if not history:
        return ScheduleRow(schedule, project, shown, "-", "never ran", None)
    last = history[-1]
    try:
        record = find_run(project.sessions_root, last.run_id) if last.run_id else None
    except RunRecordBroken:
        record = None
    url = f"{project.base}/runs/{last.run_id}" if record is not None else None
    state = str(record.state) if record is not None else last.outcome
    return ScheduleRow(schedule, project, shown, last.fired_at.strftime("%Y-%m-%d %H:%M %Z"), state, url, last.error)


def routes(site: Site) -> list[Route]:
    async def schedules(request: Request) -> Response:
        store = ScheduleStore(site.store.data_dir)
        try:
            found, unreadable = store.read()
            problem = "; ".join(entry.describe(store.file) for entry in unreadable)
        except ScheduleError as exc:
            found, problem = [], str(exc)
        now = site.now()
        rows = [_row(store, s, site.view(s.project), now) for s in found]
        return site.render("schedules.html", rows=rows, problem=problem)

    return [Route("/schedules", schedules)]
