"""A project's chat pages: its conversations, one conversation's tasks live (server-sent events), a task form.

Tasks are submitted through the UI's one ConversationRunner (`Site.conversations`), which starts each as a
headless session of the conversation's role; the pages read the conversations store, never a copy of it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from dashboard.site import ProjectView, Site, when
from orchestrator.conversation_runner import ConversationRunner
from orchestrator.conversations import (
    ENDED,
    QUEUED,
    Conversation,
    ConversationError,
    ConversationStore,
    EmptyTask,
    NoSuchConversation,
    Task,
    TaskTooLong,
)

POLL_SECONDS = 0.5
STREAM_SECONDS = 300.0  # a feed ends after this long; the browser's EventSource opens a fresh one by itself


def task_row(project: ProjectView, task: Task, tasks: list[Task]) -> dict[str, Any]:
    """One task as the page shows it: its state in words (a queued one says how many wait before it)."""
    ahead = sum(1 for t in tasks if t.id < task.id and t.phase != ENDED)
    shown = (f"queued behind {ahead}" if ahead else "queued") if task.phase == QUEUED else (task.state or task.phase)
    return {"id": task.id, "task": task.task, "phase": task.phase, "state": shown, "run_id": task.run_id,
            "run_url": f"{project.base}/runs/{task.run_id}" if task.run_id else None, "summary": task.summary,
            "error": task.error, "exit_code": task.exit_code, "submitted": when(task.submitted_at)}


def snapshot(project: ProjectView, store: ConversationStore, conversation_id: int) -> dict[str, Any]:
    tasks = store.tasks(conversation_id)
    return {"tasks": [task_row(project, t, tasks) for t in tasks]}


async def _events(request: Request, project: ProjectView, store: ConversationStore,
                  conversation_id: int) -> AsyncIterator[str]:
    """An event with the conversation's tasks each time they change, for STREAM_SECONDS at most."""
    seen = ""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STREAM_SECONDS
    while loop.time() < deadline and not await request.is_disconnected():
        try:
            data = json.dumps(await asyncio.to_thread(snapshot, project, store, conversation_id))
        except ConversationError:
            return
        if data != seen:
            seen = data
            yield f"data: {data}\n\n"
        await asyncio.sleep(POLL_SECONDS)


Handler = Callable[[Request, ConversationRunner], Awaitable[Response]]


def _guarded(site: Site, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """`handler` given the UI's runner; a conversation that is not the project's is a 404, a store that cannot
    be read a 503 (one line each)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request, site.conversations_runner())
        except NoSuchConversation as exc:
            return PlainTextResponse(exc.message, status_code=404)
        except ConversationError as exc:
            return PlainTextResponse(f"conversations are unavailable: {exc.message}", status_code=503)

    return endpoint


def _conversation_of(site: Site, request: Request, runner: ConversationRunner) -> tuple[ProjectView, Conversation]:
    """The project and conversation a `/chat/{id}` request names; NoSuchConversation when the project has none."""
    project = site.project(request)
    conversation_id = int(request.path_params["conversation_id"])
    conversation = runner.store.get(conversation_id)
    if conversation.project.resolve() != project.dir.resolve():
        raise NoSuchConversation(conversation_id)
    return project, conversation


async def _submit(runner: ConversationRunner, project: ProjectView, conversation_id: int, text: str) -> Response:
    """Queue `text` in the conversation (started at once if nothing of it runs); back to its page."""
    if project.missing:
        return PlainTextResponse(f"project {project.dir} is missing: nothing to run", status_code=409)
    try:
        await asyncio.to_thread(runner.submit, conversation_id, text)
    except TaskTooLong as exc:
        return PlainTextResponse(exc.message, status_code=413)
    except EmptyTask as exc:
        return PlainTextResponse(exc.message, status_code=400)
    return RedirectResponse(f"{project.base}/chat/{conversation_id}", status_code=303)


def routes(site: Site) -> list[Route]:
    """Under a project's `/p/{project}` prefix."""

    async def index(request: Request, runner: ConversationRunner) -> Response:
        project = site.project(request)
        rows = []
        for conversation in await asyncio.to_thread(runner.store.recent, project.dir):
            tasks = await asyncio.to_thread(runner.store.tasks, conversation.id)
            rows.append((conversation, task_row(project, tasks[-1], tasks) if tasks else None, len(tasks)))
        return site.render("chat_list.html", project=project, rows=rows)

    async def page(request: Request, runner: ConversationRunner) -> Response:
        project, conversation = _conversation_of(site, request, runner)
        data = await asyncio.to_thread(snapshot, project, runner.store, conversation.id)
        return site.render("chat.html", project=project, conversation=conversation, tasks=data["tasks"])

    async def events(request: Request, runner: ConversationRunner) -> Response:
        project, conversation = _conversation_of(site, request, runner)
        return StreamingResponse(_events(request, project, runner.store, conversation.id),
                                 media_type="text/event-stream")

    async def new(request: Request, runner: ConversationRunner) -> Response:
        project = site.project(request)
        form = request.state.form
        role, text = str(form.get("role", "")).strip(), str(form.get("task", ""))
        if not text.strip() or project.missing:
            return await _submit(runner, project, 0, text) if project.missing else PlainTextResponse(
                "a conversation starts with a task", status_code=400)
        conversation = await asyncio.to_thread(runner.store.create, project.dir, role=role, source="ui")
        return await _submit(runner, project, conversation.id, text)

    async def add(request: Request, runner: ConversationRunner) -> Response:
        project, conversation = _conversation_of(site, request, runner)
        return await _submit(runner, project, conversation.id, str(request.state.form.get("task", "")))

    return [
        Route("/chat", _guarded(site, index)),
        Route("/chat", _guarded(site, new), methods=["POST"]),
        Route("/chat/{conversation_id:int}", _guarded(site, page)),
        Route("/chat/{conversation_id:int}/events", _guarded(site, events)),
        Route("/chat/{conversation_id:int}/tasks", _guarded(site, add), methods=["POST"]),
    ]
