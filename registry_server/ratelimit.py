"""Per-client-address token bucket as plain ASGI middleware; over the limit is a 429 with Retry-After."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

DEFAULT_RATE = 200.0
MAX_CLIENTS = 10_000

Scope = dict[str, Any]


class RateLimit:
    """`rate` requests a second per address, bursts up to `burst` (default 2 × rate); `rate` 0 turns it off."""

    def __init__(self, app: Any, rate: float = DEFAULT_RATE, burst: float | None = None) -> None:
        self.app = app
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else max(1.0, 2 * self.rate))
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, client: str, now: float | None = None) -> float:
        """Spend one token of `client`'s bucket; 0 when allowed, else the seconds until one is available."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self._buckets[client] = (tokens - 1, now)
                wait = 0.0
            else:
                self._buckets[client] = (tokens, now)
                wait = (1 - tokens) / self.rate
            if len(self._buckets) > MAX_CLIENTS:
                self._prune(now)
        return wait

    def _prune(self, now: float) -> None:
        full_after = self.burst / self.rate
        self._buckets = {c: (t, last) for c, (t, last) in self._buckets.items() if now - last < full_after}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.rate <= 0:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        wait = self.take(client[0] if client else "unknown")
        if not wait:
            await self.app(scope, receive, send)
            return
        retry = str(max(1, math.ceil(wait)))
        body = json.dumps({"error": f"rate limit exceeded: retry in {retry} s"}).encode()
        await send({
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", retry.encode()),
            ],
        })
        await send({"type": "http.response.body", "body": body})
