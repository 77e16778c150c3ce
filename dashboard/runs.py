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
from dashboard.run_files import produced
from dashboard.site import ProjectView, Site, duration
from dashboard.timeline import MAX_MARKS, MAX_ROWS, TRACE_BYTES, Trace, layout, read_trace
from orchestrator.run_record import (
    FINAL_STATES,
    SESSION_FILE,
    AgentRecord,
    RunRecord,
    RunRecordBroken,
    find_run,
)

LOG_FILE = "agent.log"  # what orchestrator.runtime writes in each agent's workspace
POLL_SECONDS = 0.5
MAX_LISTED = 500  # agents listed in the tree (`strawpot agents RUN_ID` lists all)
MAX_LOGS = 50  # agents whose log tail the page shows


def _log_path(agent: AgentRecord) -> Path | None:
    return Path(agent.workspace) / LOG_FILE if agent.workspace else None


def shown(record: RunRecord) -> tuple[list[tuple[int, AgentRecord]], list[AgentRecord], dict[str, int]]:
    """The agents the page lists (the first MAX_LISTED in tree order), those whose log tail it shows (at most
    MAX_LOGS: the live ones first), and how many of each are left out: a run of thousands of agents stays a
    page of bounded size."""
    tree = record.tree()
    ordered = [a for _, a in tree if a.state not in FINAL_STATES] + [a for _, a in tree if a.state in FINAL_STATES]
    return tree[:MAX_LISTED], ordered[:MAX_LOGS], {"agents_left_out": max(len(tree) - MAX_LISTED, 0),
                                                   "logs_left_out": max(len(tree) - MAX_LOGS, 0)}


def snapshot(record: RunRecord) -> dict[str, Any]:
    """What the page's script needs to redraw the tree and the logs: the run state, one row per agent listed,
    the log tails shown, and how many of each were left out."""
    listed, logged, left_out = shown(record)
    rows = [{"depth": depth, "agent_id": a.agent_id, "role": a.role, "agent": a.agent, "state": a.state,
             "duration": duration(a), "parent": a.parent or "-", "active": a.state not in FINAL_STATES}
            for depth, a in listed]
    logs = [{"agent_id": a.agent_id, "log": tail(log) if (log := _log_path(a)) else ""} for a in logged]
    return {"state": record.state, "agents": rows, "logs": logs, "worktree_state": record.isolation.get("state"),
            "merge_result": record.merge_result, "summary": record.summary, **left_out}


def _readable(sessions_root: Path, run_id: str) -> RunRecord | None:
    """The run's record, or None while it is missing or unreadable (a feed keeps showing the last one read)."""
    try:
        return find_run(sessions_root, run_id)
    except RunRecordBroken:
        return None


def stamp(session: Path, record: RunRecord | None, also: tuple[Path, ...] = ()) -> tuple[int, ...]:
    """What changes when the run or any agent's log (or a file of `also`) does: session.json's mtime, size and
    inode (it is replaced, never edited: two records in one clock tick differ there) and every log's size;
    OSError while session.json is missing."""
    st = session.stat()
    return st.st_mtime_ns, st.st_size, st.st_ino, *_log_sizes(record, also)


def _log_sizes(record: RunRecord | None, also: tuple[Path, ...] = ()) -> tuple[int, ...]:
    sizes = []
    for log in [*(_log_path(a) for a in (shown(record)[1] if record is not None else ())), *also]:
        try:
            sizes.append(log.stat().st_size if log else -1)
        except OSError:
            sizes.append(-1)
    return tuple(sizes)


async def _events(request: Request, sessions_root: Path, run_id: str) -> AsyncIterator[str]:
    """A server-sent event each time the run's session.json or an agent's log changes, until the run ends."""
    path = sessions_root / run_id / SESSION_FILE
    seen: tuple[int, ...] | None = None
    failed: tuple[int, ...] | None = None  # session.json's stamp when a read of it last failed
    record: RunRecord | None = None
    while not await request.is_disconnected():
        try:
            now = stamp(path, record)
        except OSError:
            return
        if now != seen:
            changed = seen is None or now[:3] != seen[:3]  # session.json itself, not only a log
            fresh = _readable(sessions_root, run_id) if changed else None
            if changed and fresh is None and now[:3] != failed:
                failed = now[:3]  # half written (edited in place): read once more at the next poll
            else:
                if fresh is not None:
                    record, failed = fresh, None
                # session.json as it was before the read: a record replaced after the read is read at the next poll
                seen = (*now[:3], *_log_sizes(record))
                if record is not None:  # one that stays unreadable: the last one read, with its logs now
                    yield f"data: {json.dumps(snapshot(record))}\n\n"
                    if record.state in FINAL_STATES:
                        yield "event: end\ndata: {}\n\n"  # or the browser's EventSource would reconnect
                        return
        await asyncio.sleep(POLL_SECONDS)


def _memory(record: RunRecord, trace: Trace) -> dict[str, Any]:
    """The memory provider the run recorded in its inputs, and what the trace says failed of it."""
    settings = record.inputs.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    return {"provider": settings.get("memory.provider"), "max_prompt_bytes": settings.get("memory.max_prompt_bytes"),
            "failures": [str(e.get("message", "")) for e in trace.events if e.get("event") == "memory_failed"]}


def after_context(project: ProjectView, record: RunRecord) -> dict[str, Any]:
    """What the run page draws from the trace and the merge: the timeline and the files the run produced (also
    served alone, for run.js to redraw while the run goes on and when it ends)."""
    trace = read_trace(project.sessions_root / record.run_id)
    return {"trace": trace, "timeline": layout(record, trace.events), "produced": produced(record),
            "run_id": record.run_id, "project": project, "max_rows": MAX_ROWS, "max_marks": MAX_MARKS,
            "trace_mib": TRACE_BYTES // (1024 * 1024)}


def run_context(project: ProjectView, run_id: str) -> dict[str, Any] | None:
    """The run page's data; `data` is None for a run whose session.json is unreadable, None for no such run."""
    root = project.sessions_root
    try:
        record = find_run(root, run_id)
    except RunRecordBroken as exc:
        return {"data": None, "broken": exc.reason, "tree": [], "logs": []}
    if record is None:
        return None
    listed, logged, left_out = shown(record)
    logs = [(a.agent_id, tail(log) if (log := _log_path(a)) else "") for a in logged]
    after = after_context(project, record)
    return {"data": record, "tree": listed, "logs": logs, **left_out, "max_listed": MAX_LISTED, "inputs": record.inputs,
            "isolation": record.isolation, "merge_result": record.merge_result,
            "memory": _memory(record, after["trace"]), "final": FINAL_STATES,
            "inputs_json": json.dumps(record.inputs, indent=2, sort_keys=True), **after}


def routes(site: Site) -> list[Route]:
    """The run page and its event stream, under a project's `/p/{project}` prefix."""

    async def run(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        context = run_context(project, run_id)
        if context is None:
            return site.render("missing.html", status=404, project=project, run_id=run_id)
        return site.render("run.html", **{"project": project, "run_id": run_id, **context})

    async def events(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        if _readable(project.sessions_root, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        return StreamingResponse(_events(request, project.sessions_root, run_id), media_type="text/event-stream")

    async def after(request: Request) -> Response:
        project = site.project(request)
        run_id = request.path_params["run_id"]
        record = _readable(project.sessions_root, run_id)
        if record is None:
            return PlainTextResponse(f"no readable run {run_id!r}", status_code=404)
        return site.render("run_after.html", **after_context(project, record))

    return [Route("/runs/{run_id}", run), Route("/runs/{run_id}/events", events),
            Route("/runs/{run_id}/after", after)]
