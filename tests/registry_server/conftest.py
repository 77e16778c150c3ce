"""Registry fixtures: the app in-process over each storage, and a live `strawpot registry serve`."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry_server import MemoryStorage, SQLiteStorage, create_app, create_token
from registry_server.storage.base import Storage
from tests._live_registry import LiveRegistry, start_registry
from tests.registry_server._helpers import Api

with warnings.catch_warnings():  # starlette 1.x nudges towards httpx2; the httpx-based TestClient still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(params=["memory", "sqlite"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    store: Storage = MemoryStorage() if request.param == "memory" else SQLiteStorage(tmp_path / "data")
    yield store
    store.close()


def make_api(store: Storage, *, rate_limit: float = 0) -> Api:
    client = TestClient(create_app(store, rate_limit=rate_limit), raise_server_exceptions=False)
    return Api(client, store, create_token(store, "root", admin=True), create_token(store, "alice"),
               create_token(store, "bob"))


@pytest.fixture
def api(storage: Storage) -> Iterator[Api]:
    made = make_api(storage)
    with made.client:
        yield made


@pytest.fixture
def live_registry(tmp_path: Path) -> Iterator[LiveRegistry]:
    """A real server subprocess with its own data folder and an admin token (function scope)."""
    with start_registry(tmp_path) as reg:
        yield reg


@pytest.fixture(scope="module")
def shared_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    """One live server for a whole test module (the compatibility scenario builds on itself)."""
    with start_registry(tmp_path_factory.mktemp("registry")) as reg:
        yield reg
