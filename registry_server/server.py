"""Run the registry with uvicorn (one process, or N workers under uvicorn's supervisor); print where it listens."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette

from registry_server.app import create_app
from registry_server.limits import MAX_REQUEST_HEAD
from registry_server.mirror.opening import UpstreamSpec, open_mirror
from registry_server.protocol import CoalescingHTTPProtocol
from registry_server.ratelimit import DEFAULT_RATE
from registry_server.storage.backends import StorageSpec, open_storage
from registry_server.storage.base import Storage


def _announce(host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    print(f"registry listening on http://{shown}:{port}", file=sys.stderr, flush=True)


class _Server(uvicorn.Server):
    """A uvicorn server that prints its URL once its sockets listen (port 0 picks a free one)."""

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        _announce(*self.servers[0].sockets[0].getsockname()[:2])


def build_app(spec: StorageSpec, rate_limit: float, public_url: str | None = None,
              allow_ranges: bool = False, upstream: UpstreamSpec | None = None,
              require_signatures: bool = False) -> Starlette:
    """The app over the storage `spec` names (in front of `upstream`, if given); its lifespan's end writes pending
    counts and closes the storage."""
    local = open_storage(spec)
    storage: Storage = local if upstream is None else open_mirror(local, spec, upstream)
    app = create_app(storage, rate_limit=rate_limit, public_url=public_url, allow_ranges=allow_ranges,
                     require_signatures=require_signatures)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            app.state.registry.close()
            storage.close()

    app.router.lifespan_context = lifespan
    return app


class _Config(uvicorn.Config):
    """A uvicorn config that builds the app where it is loaded: in each worker process, after the spawn
    (it is pickled to the workers with the storage spec, and opens its own connections there)."""

    def __init__(self, spec: StorageSpec, rate_limit: float, public_url: str | None, allow_ranges: bool,
                 upstream: UpstreamSpec | None, require_signatures: bool, **options: Any) -> None:
        self.spec, self.rate_limit, self.public_url, self.allow_ranges = spec, rate_limit, public_url, allow_ranges
        self.upstream, self.require_signatures = upstream, require_signatures
        super().__init__("registry_server.server:build_app", **options)

    def load(self) -> None:
        self.app = build_app(self.spec, self.rate_limit, self.public_url, self.allow_ranges, self.upstream,
                             self.require_signatures)
        super().load()
        if self.access_log:  # uvicorn sets its access logger to `log_level`; the access lines are INFO
            logging.getLogger("uvicorn.access").setLevel(logging.INFO)


def serve(host: str, port: int, spec: StorageSpec, *, rate_limit: float = DEFAULT_RATE, workers: int = 1,
          log_level: str = "warning", access_log: bool = False, public_url: str | None = None,
          allow_ranges: bool = False, upstream: UpstreamSpec | None = None, require_signatures: bool = False) -> None:
    """Serve until interrupted, with `workers` processes sharing one listening socket.

    `access_log` prints one line per request on stderr (client, method, path, status), uvicorn's own format;
    `allow_ranges` takes dependency ranges in published packages (StrawHub's grammar refuses them); `upstream`
    puts the registry in front of others (`registry_server.mirror`).
    """
    config = _Config(
        spec, rate_limit, public_url, allow_ranges, upstream, require_signatures, host=host, port=port,
        log_level=log_level, access_log=access_log, lifespan="on",
        http=CoalescingHTTPProtocol, timeout_keep_alive=30, backlog=1024, workers=workers,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
    )
    if workers <= 1:
        _Server(config).run()
        return
    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    sock.listen(config.backlog)  # connections queue from now on, while the workers start
    _announce(*sock.getsockname()[:2])
    Multiprocess(config, sockets=[sock]).run()
