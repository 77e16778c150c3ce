"""What the live pages share: a server-sent event stream of a page's parts, sent when they change, and the text
helpers their templates use (elapsed time, one-line excerpts, state classes)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Hashable
from typing import Any

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import StreamingResponse

from orchestrator.run_record import State

POLL_SECONDS = 1.0
STATES = frozenset(s.value for s in State)

# What a live page is made of: `key` says whether anything changed; `parts()` is the page's parts then.
Look = Callable[[], tuple[Hashable, Callable[[], dict[str, Any]]]]


def elapsed(seconds: float) -> str:
    """A duration as the pages show it, and static/live.js ticks it: `42s`, `3m 05s`, `2h 07m`."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def took(started_at: float | None, ended_at: float | None, running: bool) -> str:
    """How long a run or an agent has run (so far, while `running`); "-" when that is not recorded."""
    if not started_at:
        return "-"
    if ended_at is None and not running:
        return "-"  # ended without recording when (an interrupted start)
    return elapsed((ended_at if ended_at is not None else time.time()) - started_at)


def excerpt(text: str, limit: int = 120) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis (a summary or task in a list)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def state_class(state: str) -> str:
    """The CSS classes of a state (static/ui.css colours them); an unknown word gets the plain class."""
    return f"state state-{state}" if state in STATES else "state"


def add_helpers(env: Environment) -> None:
    """Give the templates the helpers above."""
    env.globals.update(elapsed=elapsed, took=took, excerpt=excerpt, state_class=state_class)


def event_stream(request: Request, look: Look, poll: float = POLL_SECONDS) -> StreamingResponse:
    """A server-sent event with the page's parts now, then each time its key changes, until the page goes."""
    return StreamingResponse(_changes(request, look, poll), media_type="text/event-stream")


async def _changes(request: Request, look: Look, poll: float) -> AsyncIterator[str]:
    seen: Hashable = object()
    while not await request.is_disconnected():
        key, parts = await asyncio.to_thread(look)  # it reads run folders: off the event loop
        if key != seen:
            seen = key
            yield f"data: {json.dumps(parts())}\n\n"
        await asyncio.sleep(poll)
