"""The home page, live: the agents running now across every project the UI serves (role, runtime, elapsed time,
the last lines of their output), the most recent runs across projects, and the projects themselves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dashboard.live import event_stream
from dashboard.logtail import tail
from dashboard.runindex import LiveAgent, RunRow
from dashboard.runs import LOG_FILE
from dashboard.site import ProjectView, Site

RECENT = 20  # runs in the recent list
LINES = 4  # lines of output an agent shows in the feed
LINES_BYTES = 2048  # read from the end of its log for them


@dataclass(frozen=True)
class Activity:
    """One running agent of the feed, with its run and project."""

    project: ProjectView
    run: RunRow
    agent: LiveAgent
    lines: str  # its last lines of output


def last_lines(agent: LiveAgent) -> str:
    """The last LINES lines of the agent's log ("" before it wrote one)."""
    if not agent.workspace:
        return ""
    text = tail(Path(agent.workspace) / LOG_FILE, LINES_BYTES)
    return "\n".join(text.rstrip("\n").splitlines()[-LINES:])


def routes(site: Site) -> list[Route]:
    """The home page and its event stream, at the root."""

    def served() -> list[ProjectView]:
        return [view for used in site.projects()[0] if not (view := site.view(used.path)).missing]

    def live() -> dict[str, Any]:
        activity: list[Activity] = []
        recent: list[tuple[ProjectView, RunRow]] = []
        for project in served():
            activity += [Activity(project, run, a, last_lines(a)) for run in site.runs.running(project.sessions_root)
                         if run.going for a in run.live]
            recent += [(project, row) for row in site.runs.page(project.sessions_root, 0, RECENT)[0] if row.readable]
        activity.sort(key=lambda item: -(item.agent.started_at or item.run.started_at))
        recent.sort(key=lambda item: -item[1].started_at)
        return {"activity": activity, "recent": recent[:RECENT]}

    async def home(request: Request) -> Response:
        used, problem = site.projects()
        views = [(site.view(p.path), p.last_used) for p in used]
        return site.render("home.html", projects=views, problem=problem, **live())

    async def events(request: Request) -> Response:
        def look() -> tuple[object, Any]:
            now = live()
            return (now["activity"], now["recent"]), lambda: parts(now)

        def parts(now: dict[str, Any]) -> dict[str, Any]:
            render = site.env.get_template
            return {"html": {"activity": render("activity_items.html").render(**now),
                             "recent-body": render("recent_rows.html").render(**now)},
                    "hidden": {"idle": bool(now["activity"]), "recent": not now["recent"],
                               "no-recent": bool(now["recent"])}}

        return event_stream(request, look)

    return [Route("/", home), Route("/events", events)]
