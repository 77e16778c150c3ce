"""What one request through a mirror carries: the mirrors it has passed (so a loop is refused) and whether its
answer came from the cache because upstream could not be reached."""

from __future__ import annotations

import hashlib
import socket
from contextvars import ContextVar
from dataclasses import dataclass

HOPS_HEADER = "X-Strawpot-Mirror-Hops"  # the ids of the mirrors a request passed, comma-separated
STATUS_HEADER = "X-Strawpot-Upstream"  # `stale`: answered from the cache, upstream unreachable
MAX_HOPS = 8


@dataclass
class RequestNote:
    hops: tuple[str, ...]
    stale: bool = False


CURRENT: ContextVar[RequestNote | None] = ContextVar("strawpot_mirror_request", default=None)


def mirror_id(*where: str) -> str:
    """The same id for every worker of one registry (host and storage), another for another registry."""
    return hashlib.sha256("\0".join((socket.gethostname(), *where)).encode()).hexdigest()[:16]


def parse_hops(value: str) -> tuple[str, ...]:
    return tuple(h.strip() for h in value.split(",") if h.strip())[: MAX_HOPS + 1]


def outgoing(own: str) -> dict[str, str]:
    """The hop header of a request to upstream: the hops the request being answered carried, then this mirror."""
    note = CURRENT.get()
    return {HOPS_HEADER: ",".join(note.hops if note is not None else (own,))}


def mark_stale() -> None:
    note = CURRENT.get()
    if note is not None:
        note.stale = True
