"""The run page's steering: answer an agent's askUser question (the run folder's `asks/`), resume a paused agent."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from dashboard.launcher import detach, error_line
from dashboard.site import ProjectView, Site
from orchestrator import questions, run_control
from orchestrator.run_record import SESSION_FILE, AgentRecord, RunRecord, RunRecordBroken, State, find_run
from strawpot.model.errors import StrawpotError
from strawpot.model.layout import Project

POLL_SECONDS = 0.5
RESUME_WAIT = 15.0  # seconds the resume button waits to see the run running again (or the command refuse)
REFUSED_STATUS = {"unknown": 404, "answered": 409, "ended": 409, "invalid": 400}


def _record(project: ProjectView, run_id: str) -> RunRecord | None:
    """The run's record; None when there is none or it is unreadable."""
    try:
        return find_run(project.sessions_root, run_id)
    except RunRecordBroken:
        return None


def _resumable(record: RunRecord | None) -> list[AgentRecord]:
    """The paused agents of a run that is not running (what `strawpot resume` may continue)."""
    if record is None or record.state == State.RUNNING:
        return []
    return [a for a in record.agents if a.state == State.PAUSED]


def refusal(exc: StrawpotError) -> str:
    """A refusal as the page shows it: its line and, when it has one, what to do."""
    return f"{exc.message} ({exc.hint})" if exc.hint else exc.message


class _Steering:
    """The handlers; each finds its project from the request (`Site.project`)."""

    def __init__(self, site: Site) -> None:
        self.site = site

    def panel(self, project: ProjectView, run_id: str) -> dict[str, Any]:
        """What templates/steer_panel.html shows: the run's questions and its paused agents."""
        record = _record(project, run_id)
        return {"questions": questions.questions(project.sessions_root / run_id) if record else [],
                "resumable": _resumable(record), "running": record is not None and record.state == State.RUNNING}

    def _item(self, project: ProjectView, run_id: str, question: questions.Question, running: bool) -> str:
        return self.site.env.get_template("ask_item.html").render(project=project, run_id=run_id, q=question,
                                                                  running=running)

    async def events(self, request: Request) -> Response:
        project, run_id = self.site.project(request), request.path_params["run_id"]
        if _record(project, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        return StreamingResponse(self._asks_events(request, project, run_id), media_type="text/event-stream")

    async def _asks_events(self, request: Request, project: ProjectView, run_id: str) -> AsyncIterator[str]:
        """An event each time the run's questions change; the last one (`final`) once the run is over."""
        seen: list[tuple[str, str]] | None = None
        while not await request.is_disconnected():
            record = _record(project, run_id)
            final = record is None or record.state != State.RUNNING
            found = questions.questions(project.sessions_root / run_id)
            now = [(q.ask_id, q.answered_by) for q in found]
            if now != seen or final:
                seen = now
                asks = [{"id": q.ask_id, "state": (q.answered_by or "open") + ("" if not final else "-final"),
                         "html": self._item(project, run_id, q, not final)} for q in found]
                yield f"data: {json.dumps({'asks': asks, 'final': final})}\n\n"
            if final:
                return
            await asyncio.sleep(POLL_SECONDS)

    async def answer(self, request: Request) -> Response:
        project = self.site.project(request)
        run_id, ask_id = request.path_params["run_id"], request.path_params["ask_id"]
        if _record(project, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        form = request.state.form
        text = str(form.get("choice") or form.get("text") or "")
        try:
            run_control.answer(project.sessions_root, run_id, ask_id, text, "ui")
        except run_control.AnswerNotTaken as exc:
            return PlainTextResponse(str(exc), status_code=REFUSED_STATUS[exc.reason])
        return RedirectResponse(f"{project.base}/runs/{run_id}#asks", status_code=303)

    async def resume(self, request: Request) -> Response:
        project, run_id = self.site.project(request), request.path_params["run_id"]
        if _record(project, run_id) is None:
            return PlainTextResponse(f"no run {run_id!r}", status_code=404)
        form = request.state.form
        task, agent = str(form.get("task", "")).strip(), str(form.get("agent", "")).strip()
        if not task:
            return PlainTextResponse("resuming needs a task: what to tell the resumed agent", status_code=400)
        try:  # what can be told now is told here; the resumed run itself outlives this request
            run_control.resume(Project(project.dir), run_id, agent or None)
        except StrawpotError as exc:
            return PlainTextResponse(refusal(exc), status_code=409)
        args = [*self.site.command, "resume", run_id, "--headless", "--task", task, "--project", str(project.dir),
                *(["--agent", agent] if agent else [])]
        failure = await _launched(args, project.dir, project.sessions_root, run_id)
        if failure:
            return PlainTextResponse(failure, status_code=409)
        return RedirectResponse(f"{project.base}/runs/{run_id}", status_code=303)


def routes(site: Site) -> list[BaseRoute]:
    """Under a project's `/p/{project}` prefix; also gives the templates `steer(project, run_id)` for the run
    page's panel (steer_panel.html)."""
    steering = _Steering(site)
    site.env.globals["steer"] = steering.panel
    return [
        Route("/runs/{run_id}/asks/events", steering.events),
        Route("/runs/{run_id}/asks/{ask_id}", steering.answer, methods=["POST"]),
        Route("/runs/{run_id}/resume", steering.resume, methods=["POST"]),
    ]


async def _launched(args: list[str], cwd: Path, sessions_root: Path, run_id: str) -> str:
    """Start `args` detached and wait until it ends or rewrites the run's session.json as running: "" when the
    run goes on (or ended well), else the command's own error line."""
    session_file = sessions_root / run_id / SESSION_FILE
    before = _mtime(session_file)
    with tempfile.TemporaryFile() as errors:
        proc = detach(args, cwd, stderr=errors)
        deadline = time.monotonic() + RESUME_WAIT
        while proc.poll() is None and time.monotonic() < deadline:
            if _mtime(session_file) != before and _running(sessions_root, run_id):
                return ""
            await asyncio.sleep(0.05)
        if proc.returncode:
            errors.seek(0)
            return error_line(errors.read().decode("utf-8", "replace"), proc.returncode)
    return ""


def _running(sessions_root: Path, run_id: str) -> bool:
    try:
        record = find_run(sessions_root, run_id)
    except RunRecordBroken:
        return False
    return record is not None and record.state == State.RUNNING


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
