"""Cache writes handed to the pool (`write_behind`) are finished before `close()` returns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from hub_client import Cache, HubClient


def test_close_waits_for_the_writes_under_way(make_client: Callable[..., HubClient]) -> None:
    client = make_client()
    release, done = threading.Event(), []

    def write() -> None:
        release.wait(10)
        done.append("written")

    client.write_behind(write)
    threading.Timer(0.2, release.set).start()
    client.close()  # returns only once the write ran (a close that did not wait would see it missing)
    assert done == ["written"]


def test_a_failed_write_is_dropped_not_raised(make_client: Callable[..., HubClient]) -> None:
    client = make_client()

    def write() -> None:
        raise OSError("read-only cache")

    client.write_behind(write)
    client.close()


def test_closure_documents_are_in_the_cache_after_close(
    registry: Any, cache: Cache, make_client: Callable[..., HubClient]
) -> None:
    document = {"kind": "skill", "slug": "alpha", "versions": [{
        "version": "1.0.0", "dependencies": {"skills": []}, "sha256": "a" * 64, "size": 10,
        "files": [{"path": "SKILL.md", "size": 10, "sha256": "b" * 64, "executable": False}],
        "yanked": False, "createdAt": 1763700000000,
    }]}
    registry.on("POST", "/api/v1/closure", httpx.Response(200, json={
        "packages": [{"versions": document, "etag": '"e1"'}], "unchanged": [], "missing": [], "complete": True,
    }))
    client = make_client()
    found = client.closure([("skill", "alpha")])
    assert found is not None and [v.version for v in found[("skill", "alpha")].versions] == ["1.0.0"]
    client.close()
    entry = cache.get_metadata(client.base_url, "skill", "alpha")
    assert entry is not None and entry.etag == '"e1"' and entry.body == document
