"""Run the registry with uvicorn on SQLite + a blob directory; say where it listens on stderr."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import uvicorn

from registry_server.app import create_app
from registry_server.limits import MAX_REQUEST_HEAD
from registry_server.protocol import CoalescingHTTPProtocol
from registry_server.ratelimit import DEFAULT_RATE
from registry_server.storage.sqlite import SQLiteStorage


class _Server(uvicorn.Server):
    """A uvicorn server that prints its URL once its sockets listen (port 0 picks a free one)."""

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(f"registry listening on http://{shown}:{port}", file=sys.stderr, flush=True)


def serve(host: str, port: int, data_dir: Path, *, rate_limit: float = DEFAULT_RATE, log_level: str = "warning",
          access_log: bool = False) -> None:
    """Serve until interrupted; creates `data_dir` (SQLite database and blob store) on first start.

    `access_log` prints one line per request on stderr (client, method, path, status), uvicorn's own format.
    """
    storage = SQLiteStorage(data_dir)
    app = create_app(storage, rate_limit=rate_limit)
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, access_log=access_log, lifespan="off",
        http=CoalescingHTTPProtocol, timeout_keep_alive=30, backlog=1024,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
    )
    if access_log:
        import logging

        logging.getLogger("uvicorn.access").setLevel(logging.INFO)  # the rest of uvicorn stays at `log_level`
    try:
        _Server(config).run()
    finally:
        app.state.registry.close()
        storage.close()
