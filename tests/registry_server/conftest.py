"""Registry fixtures: the app in-process over each storage, and a live `strawpot registry serve`."""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from registry_server import MemoryStorage, SQLiteStorage, create_app, create_token
from registry_server.storage.backends import StorageSpec, open_storage
from registry_server.storage.base import Storage
from tests._live_registry import LiveRegistry, start_registry
from tests._services import S3_ENV, Postgres, S3Server, postgres_server, s3_server
from tests.registry_server._helpers import Api

with warnings.catch_warnings():  # starlette 1.x nudges towards httpx2; the httpx-based TestClient still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


BUCKET = "registry-tests"
_fresh = itertools.count(1)


@pytest.fixture(scope="session")
def pg() -> Iterator[Postgres]:
    """One real PostgreSQL cluster for the whole run (each test takes its own schema of it)."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """One real S3-protocol server (moto's standalone mode) for the whole run, with the test bucket."""
    saved = {name: os.environ.get(name) for name in S3_ENV}
    os.environ.update(S3_ENV)  # boto3's own credential chain, in this process and the servers it starts
    try:
        with s3_server() as server:
            import boto3

            boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket=BUCKET)
            yield server
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class Backend:
    """A fresh, empty PostgreSQL schema and S3 prefix: the `--database`, `--blobs`, `--s3-endpoint` of a server."""

    database: str
    blobs: str
    s3_endpoint: str

    def spec(self, data_dir: Path) -> StorageSpec:
        return StorageSpec(data_dir, self.database, self.blobs, self.s3_endpoint)

    def args(self) -> list[str]:
        return ["--database", self.database, "--blobs", self.blobs, "--s3-endpoint", self.s3_endpoint]


def new_backend(pg: Postgres, s3: S3Server) -> Backend:
    """An empty PostgreSQL schema (the database's search path) and S3 prefix of the session's servers."""
    import psycopg

    name = f"t{os.getpid()}_{next(_fresh)}"
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}".encode())
    return Backend(pg.url(options=f"-csearch_path%3D{name}"), f"s3://{BUCKET}/{name}", s3.endpoint)


@pytest.fixture
def pg_s3(pg: Postgres, s3: S3Server) -> Backend:
    return new_backend(pg, s3)


@pytest.fixture(params=["memory", "sqlite", "postgres+s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """Every backend, so that one contract test covers them all."""
    store: Storage
    if request.param == "memory":
        store = MemoryStorage()
    elif request.param == "sqlite":
        store = SQLiteStorage(tmp_path / "data")
    else:
        store = open_storage(request.getfixturevalue("pg_s3").spec(tmp_path / "data"))
    yield store
    store.close()


def make_api(store: Storage, *, rate_limit: float = 0, allow_ranges: bool = False) -> Api:
    client = TestClient(create_app(store, rate_limit=rate_limit, allow_ranges=allow_ranges),
                        raise_server_exceptions=False)
    return Api(client, store, create_token(store, "root", admin=True), create_token(store, "alice"),
               create_token(store, "bob"))


@pytest.fixture
def api(storage: Storage, request: pytest.FixtureRequest) -> Iterator[Api]:
    """The app over each backend; under `pytest.mark.allow_ranges`, one started with `--allow-ranges`."""
    made = make_api(storage, allow_ranges=request.node.get_closest_marker("allow_ranges") is not None)
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


@pytest.fixture(scope="module", params=["sqlite", "postgres+s3"])
def registry_on_each_backend(request: pytest.FixtureRequest,
                             tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRegistry]:
    """`shared_registry` on SQLite + a blob folder, then on PostgreSQL + S3 (two server processes there)."""
    args: list[str] = []
    if request.param == "postgres+s3":
        args = new_backend(request.getfixturevalue("pg"), request.getfixturevalue("s3")).args()
    with start_registry(tmp_path_factory.mktemp("registry"), storage_args=args,
                        workers=2 if args else 1) as reg:
        yield reg
