"""The fast path (`HotPaths`) is a cache of the slow path: the same requests get the same answers."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from registry_server import create_app, create_token
from registry_server.storage.base import Storage
from tests.registry_server._helpers import Api, agent, skill

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

BIG = bytes(range(256)) * 400  # over the fast path's inline-read size: streamed by the handlers


def _published(storage: Storage) -> None:
    api = Api(TestClient(create_app(storage, rate_limit=0)), storage,
              create_token(storage, "root", admin=True), create_token(storage, "alice"), create_token(storage, "bob"))
    with api.client:
        api.ok("skill", {**skill("odd-paths"), "docs/a b+c.md": b"spaces and a plus\n",
                         "docs/\u00fcn\u00ef.md": b"unicode\n", "data/big.bin": BIG})
        api.ok("skill", skill("odd-paths", "1.1.0"))
        api.ok("agent", agent("wrapped"))


def _requests() -> list[tuple[str, dict[str, str]]]:
    base = "/api/v1/skills/odd-paths"
    paths = [
        f"{base}/versions", f"{base}/versions/", f"{base}/versions%0A", f"{base}%0A/versions",
        "/api/v1/Skills/odd-paths/versions", "/api/v1/skill/odd-paths/versions", "/api/v1/skills/nope/versions",
        "/api/v1/agents/wrapped/versions", "/api/v1/agents/odd-paths/versions",
        f"{base}/file?path=SKILL.md", f"{base}/file?path=SKILL.md&version=1.0.0", f"{base}/file?version=1.0.0",
        f"{base}/file?path=docs/a+b%2Bc.md&version=1.0.0", f"{base}/file?path=docs%2Fa%20b%2Bc.md&version=1.0.0",
        f"{base}/file?path=docs/%C3%BCn%C3%AF.md&version=1.0.0", f"{base}/file?path=../SKILL.md&version=1.0.0",
        f"{base}/file?path=data/big.bin&version=1.0.0", f"{base}/file?path=nope.md", f"{base}/file?path=",
        f"{base}/file?path=SKILL.md&version=9.9.9", f"{base}/file?path=SKILL.md&version=1.0",
        f"{base}/file?path=SKILL.md&path=docs/a+b%2Bc.md&version=1.0.0",
        f"{base}/versions/1.0.0/archive", f"{base}/versions/1.1.0/archive", f"{base}/versions/1.0/archive",
        f"{base}/versions/9.9.9/archive", f"{base}/versions/1.0.0/archive%0A", f"{base}/versions/v1.0.0/archive",
        "/api/v1/agents/wrapped/versions/1.0.0/archive", "/api/v1/agents/wrapped/file?path=bin/wrapper",
    ]
    out: list[tuple[str, dict[str, str]]] = [(p, {}) for p in paths]
    out += [(p, {"If-None-Match": "*"}) for p in paths[:3] + paths[9:12] + paths[22:24]]
    return out


@pytest.fixture
def two_apps(storage: Storage) -> Iterator[tuple[TestClient, TestClient]]:
    _published(storage)
    with TestClient(create_app(storage, rate_limit=0)) as fast, \
         TestClient(create_app(storage, rate_limit=0, fast_path=False)) as slow:
        yield fast, slow


def _answer(client: TestClient, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    response = client.get(path, headers=headers)
    return response.status_code, dict(response.headers), response.content


def test_fast_and_slow_paths_answer_the_same_bytes(two_apps: tuple[TestClient, TestClient]) -> None:
    fast, slow = two_apps
    for round_ in ("cold", "warm"):  # the first round loads the caches, the second answers from them
        for path, headers in _requests():
            expected = _answer(slow, path, headers)
            got = _answer(fast, path, headers)
            assert got == expected, f"{round_} GET {path} {headers}"
            etag = expected[1].get("etag")
            if etag and expected[0] == 200:
                revalidated = {**headers, "If-None-Match": etag}
                assert _answer(fast, path, revalidated) == _answer(slow, path, revalidated), f"304 for {path}"
