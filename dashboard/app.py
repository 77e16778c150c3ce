"""The Starlette app of `strawpot ui`: live activity, the projects you have used, their runs, agent trees, schedules.

Each page module holds the routes of what it serves and takes the shared `Site`; `create_app` combines their
route lists in one place (below). A project's routes live under `/p/{project}` (`Site.project(request)` says
which project a request is about); the chat adapters' API under `/i/{key}` (integration_api); the others at the
root.
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

from dashboard import (
    actions,
    chat_pages,
    home,
    integration_api,
    live,
    memory_pages,
    projects,
    runs,
    schedules,
    security,
    stats,
    steer,
)
from dashboard.api_conversations import Conversations
from dashboard.site import SettingsOf, Site, defaults_only, utc_now
from orchestrator.conversation_runner import ConversationRunner
from orchestrator.integration_keys import PREFIX, name_for_key
from orchestrator.projects import ProjectStore, project_key

STATIC = Path(__file__).parent / "static"


def home_path(project_dir: Path | None) -> str:
    """The page `strawpot ui` opens on: the project it was started in, else the projects list."""
    return f"/p/{project_key(project_dir)}/" if project_dir is not None else "/"


def create_app(project_dir: Path | None, secret: str, strawpot_cmd: list[str] | None = None,
               data_dir: Path | None = None, settings: SettingsOf = defaults_only,
               now: Callable[[], datetime] = utc_now, conversations: ConversationRunner | None = None,
               conversation_home: Path | None = None) -> Starlette:
    """The UI over every recorded project (and `project_dir`); every request must carry `secret` (see security).
    `settings` reads one project's effective settings when a page needs them (`strawpot ui` passes the settings
    layer's; the dashboard may not import it). `now` is the clock schedules' next fires are counted from: the
    scheduler's, when a test injects one. `conversations` runs the conversations' tasks (`strawpot ui`'s
    runner, shared by the adapters' API and the chat pages; one is made when none is given); a global conversation
    belongs to `conversation_home`, else to `project_dir`."""
    site = Site(secret=secret, command=strawpot_cmd or [sys.executable, "-P", "-m", "strawpot.cli"],
                store=ProjectStore(data_dir), home=project_dir, settings=settings, now=now, conversations=conversations)
    live.add_helpers(site.env)

    # The one place route lists are combined: a new page module adds its list here.
    project_routes: list[BaseRoute] = [*projects.routes(site), *runs.routes(site), *actions.routes(site),
                                       *steer.routes(site), *memory_pages.routes(site), *stats.routes(site),
                                       *chat_pages.routes(site)]
    root_routes: list[BaseRoute] = [*home.routes(site), *schedules.routes(site)]

    api = Conversations(site.store.data_dir, lambda: conversation_home or project_dir, site.conversations_runner)

    async def guard(request: Request, call_next: Any) -> Response:
        return await security.check(request, secret, call_next)

    return Starlette(
        routes=[
            *root_routes,
            Mount("/p/{project}", routes=project_routes),
            Mount(PREFIX + "/{key}", app=integration_api.app(api, lambda key: name_for_key(site.store.data_dir, key))),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
    )
