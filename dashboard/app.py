"""The Starlette app of `strawpot ui`: a project's runs and each run's agent tree, read from its run folder."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from dashboard import memory_pages, security, steer
from dashboard.launcher import detach, error_line
from dashboard.logtail import tail
from orchestrator.session import FINAL_STATES, SESSION_FILE, list_sessions, load_session
from strawpot.model.layout import Project

STATIC = Path(__file__).parent / "static"
LOG_FILE = "agent.log"  # what orchestrator.runtime writes in each agent's workspace


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if isinstance(ts, (int, float)) else "-"


def _duration(agent: dict[str, Any]) -> str:
    start, end = agent.get("started_at"), agent.get("ended_at")
    if not isinstance(start, (int, float)):
        return "-"
    stop = end if isinstance(end, (int, float)) else time.time()
    return f"{stop - start:.1f}s"


def _tree(agents: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Agents in delegation order (parent before children), each with its depth for indentation."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {a.get("agent_id") for a in agents}
    for a in agents:
        parent = a.get("parent") if a.get("parent") in ids else None
        children.setdefault(parent, []).append(a)
    out: list[tuple[int, dict[str, Any]]] = []

    def walk(parent: str | None, depth: int) -> None:
        for a in children.get(parent, []):
            out.append((depth, a))
            walk(a.get("agent_id"), depth + 1)

    walk(None, 0)
    return out


POLL_SECONDS = 0.5


def snapshot(data: dict[str, Any]) -> dict[str, Any]:
    """What the page's script needs to redraw the tree: the run state and one row per agent, in tree order."""
    agents = [a for a in data.get("agents", []) if isinstance(a, dict)]
    rows = [{"depth": depth, "agent_id": a.get("agent_id"), "role": a.get("role"), "agent": a.get("agent"),
             "state": a.get("state"), "duration": _duration(a), "parent": a.get("parent") or "-"}
            for depth, a in _tree(agents)]
    return {"state": data.get("state"), "agents": rows}


async def _events(request: Request, sessions_root: Path, run_id: str) -> AsyncIterator[str]:
    """A server-sent event each time the run's session.json changes (its mtime), until the run ends."""
    path = sessions_root / run_id / SESSION_FILE
    seen: int | None = None
    while not await request.is_disconnected():
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return
        if mtime != seen:
            seen = mtime
            data = load_session(sessions_root, run_id)
            if data is not None:
                yield f"data: {json.dumps(snapshot(data))}\n\n"
                if data.get("state") in FINAL_STATES:
                    return
        await asyncio.sleep(POLL_SECONDS)


def _run_context(sessions_root: Path, run_id: str) -> dict[str, Any] | None:
    """The run page's data; `data` is None for a run whose session.json is unreadable, None for no such run."""
    data = load_session(sessions_root, run_id)
    if data is None:
        folder = sessions_root / run_id
        if "/" not in run_id and not run_id.startswith(".") and (folder / SESSION_FILE).is_file():
            return {"data": None, "tree": [], "logs": {}}
        return None
    agents = [a for a in data.get("agents", []) if isinstance(a, dict)]
    logs = {a.get("agent_id"): tail(Path(str(a.get("workspace", ""))) / LOG_FILE)
            for a in agents if a.get("workspace")}
    return {"data": data, "tree": _tree(agents), "logs": logs}


def _start_options(form: Any) -> list[str] | None:
    """`strawpot start`'s options from the start form, or None when the form is not a valid session."""
    role, task = str(form.get("role", "")).strip(), str(form.get("task", "")).strip()
    isolation = str(form.get("isolation", "")).strip()
    if not task or isolation not in ("", "none", "worktree"):
        return None
    return ["--task", task, *(["--role", role] if role else []), *(["--isolation", isolation] if isolation else [])]


def _spawn(args: list[str], cwd: Path) -> str:
    """Run a strawpot command exactly as a user would (its own checks apply); its error line, or "" on success."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    return "" if done.returncode == 0 else error_line(done.stderr, done.returncode)


def _action_routes(project_dir: Path, sessions_root: Path, command: list[str]) -> list[Route]:
    """The state-changing routes (POST only; the guard has checked their CSRF token and Origin)."""

    async def cancel(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if load_session(sessions_root, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        agent = str(request.state.form.get("agent", "")).strip()
        failure = _spawn([*command, "cancel", run_id, "--project", str(project_dir),
                          *(["--agent", agent] if agent else [])], project_dir)
        if failure:
            return PlainTextResponse(failure, status_code=409)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    async def prune(request: Request) -> Response:
        failure = _spawn([*command, "sessions", "--prune", "--project", str(project_dir)], project_dir)
        return PlainTextResponse(failure, status_code=409) if failure else RedirectResponse("/", status_code=303)

    async def start(request: Request) -> Response:
        options = _start_options(request.state.form)
        if options is None:
            return PlainTextResponse("a session needs a task (and isolation none or worktree)", status_code=400)
        args = [*command, "start", "--headless", *options]
        # Exactly what a user would type in the project folder, so the verified-lock checks apply; the run
        # records itself under .strawpot/sessions/, where the runs page finds it.
        detach(args, project_dir)
        return RedirectResponse("/", status_code=303)

    return [
        Route("/prune", prune, methods=["POST"]),
        Route("/start", start, methods=["POST"]),
        Route("/runs/{run_id}/cancel", cancel, methods=["POST"]),
    ]


def create_app(project_dir: Path, secret: str, strawpot_cmd: list[str] | None = None,
               memory_provider: str = "builtin") -> Starlette:
    """The UI over `project_dir`'s `.strawpot/sessions/`; every request must carry `secret` (see security)."""
    sessions_root = Project.at(project_dir).sessions_dir
    env = Environment(loader=PackageLoader("dashboard", "templates"), autoescape=select_autoescape(default=True))
    env.globals.update(when=_when, duration=_duration, csrf=security.csrf_token(secret))
    command = strawpot_cmd or [sys.executable, "-m", "strawpot.cli"]

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(project=project_dir, **context), status_code=status)

    async def index(request: Request) -> Response:
        return render("index.html", runs=list_sessions(sessions_root))

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        context = _run_context(sessions_root, run_id)
        if context is None:
            return render("missing.html", status=404, run_id=run_id)
        return render("run.html", run_id=run_id, **context)

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if load_session(sessions_root, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        return StreamingResponse(_events(request, sessions_root, run_id), media_type="text/event-stream")

    async def guard(request: Request, call_next: Any) -> Response:
        return await security.check(request, secret, call_next)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/runs/{run_id}", run),
            Route("/runs/{run_id}/events", events),
            *_action_routes(project_dir, sessions_root, command),
            *steer.routes(project_dir, command, env), *memory_pages.routes(project_dir, memory_provider, env),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
    )
