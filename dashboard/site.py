"""What every page module of the UI shares: templates, the strawpot command, and which projects it serves."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from dashboard import security
from dashboard.runindex import RunIndex
from orchestrator.conversation_runner import ConversationRunner
from orchestrator.conversations import ConversationStore
from orchestrator.projects import ProjectStore, UsedProject, project_key
from orchestrator.run_record import AgentRecord
from orchestrator.schedules import ScheduleError, ScheduleStore
from strawpot.model.layout import Project
from strawpot.model.plural import count
from strawpot.model.settings import Settings, layered

# A project's effective settings (`strawpot ui` gives strawpot.config_files' layers, which the dashboard may not import).
SettingsOf = Callable[[Path], Settings]


def defaults_only(project_dir: Path) -> Settings:
    """The built-in defaults, for an app made without the settings layer (it reads no file)."""
    return layered([])


def page_number(request: Request) -> int:
    """The page a list is asked for (`?page=N`), counted from 1; 1 when absent or not a page number."""
    raw = request.query_params.get("page", "")
    return int(raw) if raw.isdigit() and 0 < int(raw) < 1_000_000 else 1


def when(ts: Any) -> str:
    """A recorded time as local date and time; "-" for none, or for a number no date is (NaN, out of range)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if isinstance(ts, (int, float)) else "-"
    except (OverflowError, ValueError, OSError):
        return "-"


def duration(agent: AgentRecord) -> str:
    if agent.started_at is None:
        return "-"
    return f"{(agent.ended_at if agent.ended_at is not None else time.time()) - agent.started_at:.1f}s"


@dataclass(frozen=True)
class ProjectView:
    """One project the UI serves: its URL key, its folder, and its URL prefix (`/p/KEY`)."""

    key: str
    dir: Path

    @property
    def base(self) -> str:
        return f"/p/{self.key}"

    @property
    def sessions_root(self) -> Path:
        return Project(self.dir).sessions_dir

    @property
    def missing(self) -> bool:
        return not self.dir.is_dir()


def utc_now() -> datetime:
    """The real clock, in UTC (what `strawpot ui` and its scheduler run by)."""
    return datetime.now(UTC)


@dataclass
class Site:
    """The shared state of one `strawpot ui`: route modules take it and return their `Route`s."""

    secret: str
    command: list[str]  # how to run strawpot (`[python, -m, strawpot.cli]`)
    store: ProjectStore
    home: Path | None = None  # the project `strawpot ui` was started in (listed even if never `start`ed)
    settings: SettingsOf = defaults_only  # read when a page is served, so a changed strawpot.toml counts at once
    env: Environment = field(init=False)
    runs: RunIndex = field(default_factory=RunIndex)
    failed_starts: dict[str, str] = field(default_factory=dict)  # project key -> the last failed start's error
    now: Callable[[], datetime] = utc_now  # the scheduler's clock, for next fires
    conversations: ConversationRunner | None = None  # the UI's one runner of conversations' tasks (chat pages)

    def __post_init__(self) -> None:
        self.env = Environment(loader=PackageLoader("dashboard", "templates"),
                               autoescape=select_autoescape(default=True))
        self.env.globals.update(when=when, duration=duration, count=count, csrf=security.csrf_token(self.secret))

    def conversations_runner(self) -> ConversationRunner:
        """The UI's one runner of conversations' tasks, shared by the chat pages and the adapters' API: the one it
        was given (`strawpot ui` serves every queue with it), else one made on its data folder at first use."""
        if self.conversations is None:
            self.conversations = ConversationRunner(ConversationStore(self.store.data_dir), command=self.command)
        return self.conversations

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**context), status_code=status)

    def projects(self) -> tuple[list[UsedProject], str]:
        """Recorded projects (most recent first), then the home project and schedules' projects if not among
        them, and a line saying why projects.json is unreadable, if it is."""
        found, problem = self.store.load()
        try:
            scheduled = [s.project for s in ScheduleStore(self.store.data_dir).list()]
        except ScheduleError:
            scheduled = []  # the schedules page says why
        for path in [*([self.home] if self.home else []), *scheduled]:
            if all(p.path != path for p in found):
                found.append(UsedProject(path, 0.0))
        return found, problem

    def project(self, request: Request) -> ProjectView:
        """The project a `/p/{project}/…` request is about; 404 for a key no recorded project has."""
        key = str(request.path_params.get("project", ""))
        for used in self.projects()[0]:
            if used.key == key:
                return ProjectView(key, used.path)
        raise HTTPException(404, f"no project {key!r}: `strawpot start` in a project records it")

    def view(self, path: Path) -> ProjectView:
        return ProjectView(project_key(path), path)
