"""A run's page and its live feed: the agent tree, log tails, inputs, memory and worktree, read from its run folder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from dashboard.logtail import tail
from dashboard.site import ProjectView, Site, duration
from orchestrator.session import FINAL_STATES, SESSION_FILE, load_session, read_trace

LOG_FILE = "agent.log"  # what orchestrator.runtime writes in each agent's workspace
POLL_SECONDS = 0.5


def tree(agents: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
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


def _agents(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in data.get("agents", []) if isinstance(a, dict)]


def _log_path(agent: dict[str, Any]) -> Path | None:
    return Path(str(agent["workspace"])) / LOG_FILE if agent.get("workspace") else None


def snapshot(data: dict[str, Any]) -> dict[str, Any]:
    """What the page's script needs to redraw the tree and the logs: the run state, one row per agent."""
    rows = []
    for depth, a in tree(_agents(data)):
        log = _log_path(a)
        rows.append({"depth": depth, "agent_id": a.get("agent_id"), "role": a.get("role"), "agent": a.get("agent"),
                     "state": a.get("state"), "duration": duration(a), "parent": a.get("parent") or "-",
                     "active": a.get("state") not in FINAL_STATES,
                     "log": tail(log) if log else ""})
    isolation = _isolation(data)
    return {"state": data.get("state"), "agents": rows, "worktree_state": isolation.get("state"),
            "merge_result": merge_result(data)}


def _isolation(data: dict[str, Any]) -> dict[str, Any]:
    isolation = data.get("isolation")
    return isolation if isinstance(isolation, dict) else {}


def merge_result(data: dict[str, Any]) -> str:
    """The merge's one-line result the run recorded at its end ("" before it ends, or with nothing to merge)."""
    return str(data.get("merge_result") or "")


def _stamp(session: Path, data: dict[str, Any] | None) -> tuple[int, ...]:
    """What changes when the run or any agent's log does: session.json's mtime and every log's size."""
    stamps = [session.stat().st_mtime_ns]
    for a in _agents(data or {}):
        log = _log_path(a)
        try:
            stamps.append(log.stat().st_size if log else -1)
        except OSError:
            stamps.append(-1)
    return tuple(stamps)


async def _events(request: Request, sessions_root: Path, run_id: str) -> AsyncIterator[str]:
    """A server-sent event each time the run's session.json or an agent's log changes, until the run ends."""
    path = sessions_root / run_id / SESSION_FILE
    seen: tuple[int, ...] | None = None
    data: dict[str, Any] | None = None
    while not await request.is_disconnected():
        try:
            stamp = _stamp(path, data)
        except OSError:
            return
        if stamp != seen:
            data = load_session(sessions_root, run_id) or data
            seen = _stamp(path, data) if data is not None else stamp
            if data is not None:
                yield f"data: {json.dumps(snapshot(data))}\n\n"
                if data.get("state") in FINAL_STATES:
                    yield "event: end\ndata: {}\n\n"  # or the browser's EventSource would reconnect
                    return
        await asyncio.sleep(POLL_SECONDS)


def _memory(data: dict[str, Any], trace: list[dict[str, Any]]) -> dict[str, Any]:
    """The memory provider the run recorded in its inputs, and what the trace says failed of it."""
    settings = (data.get("inputs") or {}).get("settings") or {}
    return {"provider": settings.get("memory.provider"), "max_prompt_bytes": settings.get("memory.max_prompt_bytes"),
            "failures": [str(e.get("message", "")) for e in trace if e.get("event") == "memory_failed"]}


def _trace(sessions_root: Path, run_id: str) -> tuple[list[dict[str, Any]], bool]:
    try:
        return read_trace(sessions_root, run_id), True
    except (OSError, ValueError):
        return [], False


def run_context(project: ProjectView, run_id: str) -> dict[str, Any] | None:
    """The run page's data; `data` is None for a run whose session.json is unreadable, None for no such run."""
    root = project.sessions_root
    data = load_session(root, run_id)
    if data is None:
        if "/" not in run_id and not run_id.startswith(".") and (root / run_id / SESSION_FILE).is_file():
            return {"data": None, "tree": [], "logs": {}}
        return None
    agents = _agents(data)
    logs = {a.get("agent_id"): tail(log) for a in agents if (log := _log_path(a))}
    trace, trace_ok = _trace(root, run_id)
    inputs = data.get("inputs") if isinstance(data.get("inputs"), dict) else {}
    return {"data": data, "tree": tree(agents), "logs": logs, "inputs": inputs, "isolation": _isolation(data),
            "merge_result": merge_result(data),
            "memory": _memory(data, trace), "trace_ok": trace_ok, "final": FINAL_STATES,
            "inputs_json": json.dumps(inputs, indent=2, sort_keys=True)}


def routes(site: Site) -> list[Route]:
    """The run page and its event stream, under a project's `/p/{project}` prefix."""

    async def run(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        context = run_context(project, run_id)
        if context is None:
            return site.render("missing.html", status=404, project=project, run_id=run_id)
        return site.render("run.html", project=project, run_id=run_id, **context)

    async def events(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        if load_session(project.sessions_root, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        return StreamingResponse(_events(request, project.sessions_root, run_id), media_type="text/event-stream")

    return [Route("/runs/{run_id}", run), Route("/runs/{run_id}/events", events)]
