"""The schedules page: each stored schedule's cron, zone, runner, next fire and last run, and a form that adds one."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from dashboard.site import ProjectView, Site
from orchestrator.run_record import RunRecordBroken, find_run
from orchestrator.scheduler import settle
from orchestrator.schedules import (
    OVERLAP_POLICIES,
    RUNNERS,
    Schedule,
    ScheduleError,
    ScheduleStore,
    add_schedule,
    check_name,
    next_fire,
    shown_name,
)
from strawpot.model.errors import UsageError

FIELDS = ("name", "cron", "project", "role", "task", "timezone", "overlap", "runner")  # the add form's


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


def _posted(site: Site, form: Any) -> Schedule:
    """The schedule the add form describes (checked by `add_schedule`, as `schedule add`'s options are); the project
    is one the UI serves, by its key. The runner goes as posted: "" is the project's [session] runner."""
    text = {key: str(form.get(key, "")).strip() for key in FIELDS}
    key = text["project"]
    folder = next((used.path for used in site.projects()[0] if used.key == key), None)
    if folder is None:
        raise ScheduleError(f"no project {key!r}: pick one the Projects page lists")
    return Schedule(name=text["name"], cron=text["cron"], project=folder, role=text["role"], task=text["task"],
                    timezone=text["timezone"], overlap=text["overlap"] or "skip", runner=text["runner"])


def routes(site: Site) -> list[Route]:
    def page(form: dict[str, str], error: str = "") -> Response:
        store = ScheduleStore(site.store.data_dir)
        try:
            found, unreadable = store.read()
            problem = "; ".join(entry.describe(store.file) for entry in unreadable)
        except ScheduleError as exc:
            found, problem = [], str(exc)
        now = site.now()
        rows = [_row(store, s, site.view(s.project), now) for s in found]
        projects = [(used.key, used.path) for used in site.projects()[0]]
        return site.render("schedules.html", 400 if error else 200, rows=rows, problem=problem, projects=projects,
                           form=form, add_error=error, runners=RUNNERS, overlaps=OVERLAP_POLICIES)

    async def schedules(request: Request) -> Response:
        return page({})

    async def add(request: Request) -> Response:
        form = request.state.form
        try:
            added = _posted(site, form)
            await asyncio.to_thread(add_schedule, ScheduleStore(site.store.data_dir), added, site.now())
        except (UsageError, OSError) as exc:  # refused (or the data folder cannot be written): said, nothing stored
            why = exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
            name = shown_name(str(form.get("name", "")).strip())
            return page({key: str(form.get(key, "")) for key in FIELDS}, f"cannot add schedule {name}: {why}")
        return RedirectResponse("/schedules", status_code=303)

    return [Route("/schedules", schedules), Route("/schedules/add", add, methods=["POST"])]
