"""The API the chat adapters speak, under `/i/{key}` (security.by_key): conversations, their sessions, notifications.

The shapes are the ones the real adapters (Slack, Telegram, Discord) send and read; docs/ui.md "The integrations
API" lists them. Every answer is JSON, an error too (`{"error": "one line"}`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, Router, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from dashboard import security
from dashboard.api_conversations import Conversations, progress
from dashboard.session_feed import follow
from orchestrator.conversations import (
    MAX_TASK_CHARS,
    Conversation,
    ConversationError,
    EmptyTask,
    NoSuchConversation,
    Task,
    TaskTooLong,
)
from strawpot.model.layout import Project

MAX_TASK_BODY = 6 * MAX_TASK_CHARS + 4096  # a JSON body holding the longest task, each character escaped (\uXXXX)
MAX_BODY = 16 * 1024  # any other request's body


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class Refused(Exception):
    """A request the API answers with an error (its status and one line)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def json_body(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, read no further than `limit` bytes (413 past them, 400 for no object)."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise Refused(413 if length.isdigit() else 400, f"the request body is over {limit:,} bytes"
                      if length.isdigit() else "a Content-Length that is not a number")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, f"the request body is over {limit:,} bytes")
    try:
        data = json.loads(bytes(body) or b"{}")
    except ValueError:
        raise Refused(400, "the request body is not JSON") from None
    if not isinstance(data, dict):
        raise Refused(400, "the request body is not a JSON object")
    return data


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(400, f"{what} must be an integer")
    return value


def _guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """`handler` with its refusals and the store's failures as JSON errors."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)  # type: ignore[no-any-return]
        except Refused as exc:
            return error(exc.status, exc.message)
        except NoSuchConversation as exc:
            return error(404, exc.message)
        except TaskTooLong as exc:
            return error(413, exc.message)
        except EmptyTask as exc:
            return error(400, exc.message)
        except ConversationError as exc:
            return error(503, exc.message)

    return endpoint


def _session(task: Task, conversation: Conversation) -> dict[str, Any]:
    now = progress(task, conversation)
    return {"run_id": task.run_id, "status": now.status, "summary": now.summary, "exit_code": now.exit_code,
            "task": task.task}


def _integration(request: Request) -> str:
    return str(request.state.integration)


def _own(request: Request) -> str:
    """The integration a `/api/integrations/{name}` request is about: only the one whose key it carries."""
    name = _integration(request)
    if request.path_params["name"] != name:
        raise Refused(404, f"no integration {request.path_params['name']!r} at this URL")
    return name


def _threaded(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
    """`handler` (which reads the store, a file) off the event loop."""

    async def run(request: Request) -> Response:
        return await run_in_threadpool(handler, request)

    return run


class Handlers:
    """The API's endpoints over one UI's conversations."""

    def __init__(self, api: Conversations) -> None:
        self.api = api

    async def _create(self, project: Path, request: Request) -> Response:
        conversation = await run_in_threadpool(self.api.store.create, project, source=_integration(request))
        return JSONResponse({"id": conversation.id, "project_id": conversation.project_id})

    async def imu_conversation(self, request: Request) -> Response:
        await json_body(request, MAX_BODY)
        home = self.api.home()
        if home is None or not Project(home).exists:
            where = f"{home} is not a project (no strawpot.toml)" if home else "no home project"
            raise Refused(409, f"{where}: set conversations.home in the global config, or run `strawpot ui` in a "
                               "project")
        return await self._create(home, request)

    async def project_conversation(self, request: Request) -> Response:
        project_id = _integer((await json_body(request, MAX_BODY)).get("project_id"), "project_id")
        project = await run_in_threadpool(self.api.store.project_path, project_id)
        if project is None:
            raise Refused(404, f"no project {project_id}")
        return await self._create(project, request)

    async def submit(self, request: Request) -> Response:
        text = (await json_body(request, MAX_TASK_BODY)).get("task")
        if not isinstance(text, str):
            raise Refused(400, "task must be a string")
        done = await run_in_threadpool(self.api.the_runner().submit, request.path_params["id"], text)
        if done.queued:
            return JSONResponse({"queued": True, "ahead": done.ahead, "task_id": done.task.id})
        return JSONResponse({"run_id": done.run_id, "task_id": done.task.id})

    def conversation(self, request: Request) -> Response:
        store = self.api.store
        found = store.get(request.path_params["id"])
        return JSONResponse({"id": found.id, "project_id": found.project_id,
                             "sessions": [_session(t, found) for t in store.tasks(found.id)]})

    def session(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        task = self.api.store.task_of_run(run_id)
        if task is None:
            raise Refused(404, f"no session {run_id} of a conversation")
        now = progress(task, self.api.store.get(task.conversation_id))
        return JSONResponse({"run_id": run_id, "status": now.status, "summary": now.summary,
                             "exit_code": now.exit_code})

    def record(self, request: Request) -> Response:
        name = _own(request)
        return JSONResponse({"name": name, "pending_notifications": len(self.api.store.pending(name))})

    def notifications(self, request: Request) -> Response:
        return JSONResponse([{"id": n.id, "chat_id": n.chat_id, "message": n.message}
                             for n in self.api.store.pending(_own(request))])

    def ack(self, request: Request) -> Response:
        name, number = _own(request), request.path_params["id"]
        if not self.api.store.ack(name, number):
            raise Refused(404, f"no notification {number} of {name}")
        return JSONResponse({"id": number, "acked": True})


def routes(api: Conversations) -> list[BaseRoute]:
    """The API's routes, relative to `/i/{key}`."""
    h = Handlers(api)
    return [
        Route("/api/imu/conversations", _guarded(h.imu_conversation), methods=["POST"]),
        Route("/api/conversations", _guarded(h.project_conversation), methods=["POST"]),
        Route("/api/conversations/{id:int}/tasks", _guarded(h.submit), methods=["POST"]),
        Route("/api/conversations/{id:int}", _guarded(_threaded(h.conversation))),
        Route("/api/sessions/{run_id}", _guarded(_threaded(h.session))),
        Route("/api/integrations/{name}", _guarded(_threaded(h.record))),
        Route("/api/integrations/{name}/notifications", _guarded(_threaded(h.notifications))),
        Route("/api/integrations/{name}/notifications/{id:int}/ack", _guarded(_threaded(h.ack)), methods=["POST"]),
        WebSocketRoute("/ws/sessions/{run_id}", follow(api)),
    ]


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
    else:
        await error(404, f"no API route {scope.get('path', '')!r}")(scope, receive, send)


def app(api: Conversations, integration_of: Callable[[str], str | None]) -> ASGIApp:
    """The API to mount at `/i/{key}`: its routes for a key `integration_of` knows, JSON 404s for the rest."""
    return security.by_key(Router(routes(api), default=_not_found), integration_of)
