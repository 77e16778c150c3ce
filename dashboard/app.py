"""The Starlette app of `strawpot ui`: live activity, the projects you have used, their runs, agent trees, schedules.

Each page module holds the routes of what it serves and takes the shared `Site`; `create_app` combines their
route lists in one place (below). A project's routes live under `/p/{project}` (`Site.project(request)` says
which project a request is about); the others at the root.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from dashboard import actions, home, live, memory_pages, projects, runs, schedules, security, steer
from dashboard.site import SettingsOf, Site, defaults_only, utc_now
from orchestrator.projects import ProjectStore, project_key

STATIC = Path(__file__).parent / "static"


def home_path(project_dir: Path | None) -> str:
    """The page `strawpot ui` opens on: the project it was started in, else the projects list."""
    return f"/p/{project_key(project_dir)}/" if project_dir is not None else "/"


def create_app(project_dir: Path | None, secret: str, strawpot_cmd: list[str] | None = None,
               data_dir: Path | None = None, settings: SettingsOf = defaults_only,
               now: Callable[[], datetime] = utc_now) -> Starlette:
    """The UI over every recorded project (and `project_dir`); every request must carry `secret` (see security).
    `settings` reads one project's effective settings when a page needs them (`strawpot ui` passes the settings
    layer's; the dashboard may not import it). `now` is the clock schedules' next fires are counted from: the
    scheduler's, when a test injects one."""
    site = Site(secret=secret, command=strawpot_cmd or [sys.executable, "-m", "strawpot.cli"],
                store=ProjectStore(data_dir), home=project_dir, settings=settings, now=now)
    live.add_helpers(site.env)

    # The one place route lists are combined: a new page module adds its list here.
    project_routes: list[BaseRoute] = [*projects.routes(site), *runs.routes(site), *actions.routes(site),
                                       *steer.routes(site), *memory_pages.routes(site)]
    root_routes: list[BaseRoute] = [*home.routes(site), *schedules.routes(site)]

    async def guard(request: Request, call_next: Any) -> Response:
        return await security.check(request, secret, call_next)

    return Starlette(
        routes=[
            *root_routes,
            Mount("/p/{project}", routes=project_routes),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
    )
