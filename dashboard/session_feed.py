"""The integrations API's WebSocket `/ws/sessions/{run_id}`: a conversation run's trace events as they come, then
how it ended.

The client opens with `{"type": "init", "trace_offset": N}` (events it has seen already); the server sends
`{"type": "trace", "offset": i, "event": {...}}` for each later event of the run's trace.jsonl, then
`{"type": "stream_complete", "status", "summary", "exit_code"}` once the run has ended, or
`{"type": "error", "message"}`, and closes. Changes are noticed as the run page's feed notices them (runs.stamp).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.websockets import WebSocket, WebSocketDisconnect

from dashboard.api_conversations import Conversations, Progress, progress
from dashboard.runs import POLL_SECONDS, stamp
from orchestrator.conversations import Conversation
from orchestrator.run_record import SESSION_FILE
from orchestrator.session import TRACE_FILE, read_trace
from strawpot.model.layout import Project

INIT_WAIT = 30.0  # seconds the client has to say where to start


async def _init(ws: WebSocket) -> int:
    """The trace offset the client's `init` message asks for (0 if it names none)."""
    message = json.loads(await asyncio.wait_for(ws.receive_text(), INIT_WAIT))
    if not isinstance(message, dict) or message.get("type") != "init":
        raise ValueError("the first message must be {\"type\": \"init\", \"trace_offset\": N}")
    offset = message.get("trace_offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError("trace_offset must be a whole number")
    return offset


def follow(api: Conversations) -> Callable[[WebSocket], Awaitable[None]]:
    """The WebSocket endpoint over `api`'s conversations."""

    async def endpoint(ws: WebSocket) -> None:
        await ws.accept()
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):  # the client went away: nothing to say
            await _serve(api, ws)
            await ws.close()

    return endpoint


async def _serve(api: Conversations, ws: WebSocket) -> None:
    run_id = str(ws.path_params["run_id"])
    task = await run_in_threadpool(api.store.task_of_run, run_id)
    if task is None:
        await ws.send_json({"type": "error", "message": f"no session {run_id} of a conversation"})
        return
    try:
        offset = await _init(ws)
    except (ValueError, TimeoutError) as exc:
        await ws.send_json({"type": "error", "message": str(exc) or "no init message"})
        return
    conversation = await run_in_threadpool(api.store.get, task.conversation_id)
    root = Project(conversation.project).sessions_dir
    session, trace = root / run_id / SESSION_FILE, root / run_id / TRACE_FILE
    gone = asyncio.ensure_future(ws.receive())  # a close from the client ends the wait below
    try:
        seen: tuple[int, ...] | None = None
        while True:
            now: Progress = await run_in_threadpool(_progress, api, run_id, conversation)
            try:
                changed = stamp(session, None, (trace,))
            except OSError:
                changed = None  # the session has not begun yet
            if changed != seen or now.over:
                seen = changed
                events = _events(root, run_id)
                for event in events[offset:]:
                    await ws.send_json({"type": "trace", "offset": offset, "event": event})
                    offset += 1
            if now.over:
                await ws.send_json({"type": "stream_complete", "status": now.status, "summary": now.summary,
                                    "exit_code": now.exit_code})
                return
            await asyncio.wait({gone}, timeout=POLL_SECONDS)
            if gone.done():
                if gone.result().get("type") == "websocket.disconnect":
                    return
                gone = asyncio.ensure_future(ws.receive())  # a message after init says nothing: read on
    finally:
        gone.cancel()


def _progress(api: Conversations, run_id: str, conversation: Conversation) -> Progress:
    task = api.store.task_of_run(run_id)
    assert task is not None
    return progress(task, conversation)


def _events(root: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's trace events so far ([] while a line is half written: the next look reads it whole)."""
    try:
        return read_trace(root, run_id)
    except (OSError, ValueError):
        return []
