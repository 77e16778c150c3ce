"""Fixtures for hub_client tests: a scriptable fake registry behind httpx.MockTransport, no real sleeping.

(pytest runs with --import-mode=importlib, so test modules cannot import from here: shared things are fixtures.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from hub_client import Cache, HubClient
from hub_client._stdlib import tls_context
from tests._loopback_servers import TLS_CERT

BASE = "http://hub.test"

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class FakeRegistry:
    """A request -> response function: scripted replies per (method, path), every request recorded.

    A route's replies are used in order and the last one repeats. Unknown routes answer a plain-text
    404, as a server without that route would.
    """

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Reply]] = {}
        self.requests: list[httpx.Request] = []
        self._lock = threading.Lock()

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.routes[(method, path)] = list(replies)

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if (r.method, r.url.path) == (method, path))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        key = (request.method, request.url.path)
        with self._lock:
            self.requests.append(request)
            replies = self.routes.get(key)
            if not replies:
                return httpx.Response(404, text="Not Found")
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


@pytest.fixture
def sleeps() -> list[float]:
    """The delays `make_client`'s clients sleep between retries, recorded here instead of slept."""
    return []


@pytest.fixture
def registry() -> FakeRegistry:
    return FakeRegistry()


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


@pytest.fixture
def make_client(registry: FakeRegistry, cache: Cache, sleeps: list[float]) -> Iterator[Callable[..., HubClient]]:
    made: list[HubClient] = []

    def make(**kwargs: Any) -> HubClient:
        kwargs.setdefault("transport", registry.transport)
        kwargs.setdefault("cache", cache)
        kwargs.setdefault("sleep", sleeps.append)
        client = HubClient(kwargs.pop("base_url", BASE), **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def router() -> respx.MockRouter:
    """respx routes for the respx tests; a request no route matches fails the test (respx answers it with an
    error) instead of reaching a fallback."""
    return respx.MockRouter(base_url=BASE, assert_all_called=False)


@pytest.fixture
def client(router: respx.MockRouter, make_client: Callable[..., HubClient]) -> HubClient:
    """A client whose requests go to `router`."""
    return make_client(transport=httpx.MockTransport(router.handler))


@dataclass(frozen=True)
class Wire:
    """One way to reach a registry on a real socket: a transport (`stdlib`, the default; `httpcore`, httpx's
    own) and a scheme (`https` against tests/_loopback_servers.py's TLS servers, trusting TLS_CERT)."""

    transport: str
    scheme: str

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    def client(self) -> dict[str, Any]:
        """HubClient keyword arguments for this wire."""
        verify: bool | str = str(TLS_CERT) if self.tls else True
        if self.transport == "stdlib":
            return {"verify": verify}
        return {"transport": httpx.HTTPTransport(verify=tls_context(verify) if self.tls else True)}


WIRES = [Wire(t, s) for s in ("http", "https") for t in ("stdlib", "httpcore")]


@pytest.fixture(params=WIRES, ids=lambda w: f"{w.transport}-{w.scheme}")
def wire(request: pytest.FixtureRequest) -> Wire:
    """Tests on real sockets take it, so both transports pass the same tests over http and https."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=WIRES[:2], ids=lambda w: f"{w.transport}-{w.scheme}")
def http_wire(request: pytest.FixtureRequest) -> Wire:
    """`wire` for the tests whose server speaks plain HTTP only."""
    return request.param  # type: ignore[no-any-return]
