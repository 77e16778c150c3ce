"""The closure extension from the client's side, against live registries on loopback: one request for all the
metadata when the registry has it; per-package `versions` when it has not (404, 501, switched off) or when its
answer cannot be trusted whole (a package twice, past its bound, a dependency left out); a lie about a sha256
is exit 5 with nothing written."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_client import HubClient
from tests._proxy import LoopbackProxy, Rewrite

CLOSURE = "/api/v1/closure"
BUNDLE = "/api/v1/archives"

@pytest.fixture
def proxied(registry: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., LoopbackProxy]]:
    made: list[LoopbackProxy] = []

    def make(rewrite: Rewrite | None = None, bundle: Rewrite | None = None) -> LoopbackProxy:
        edits = {path: f for path, f in ((CLOSURE, rewrite), (BUNDLE, bundle)) if f is not None}
        proxy = LoopbackProxy(registry.url, rewrites=edits)
        made.append(proxy)
        monkeypatch.setenv("STRAWPOT_REGISTRY_URL", proxy.url)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


def _edit(change: Callable[[dict[str, Any]], None]) -> Rewrite:
    def rewrite(status: int, data: bytes) -> tuple[int, bytes]:
        body = json.loads(data)
        change(body)
        return status, json.dumps(body).encode()

    return rewrite


def _lock_packages(project: Any) -> list[Any]:
    """The locked packages with their source left out (the registries differ, the packages must not)."""
    from strawpot.model.lockfile import Lockfile
    from valueclass import replace

    return [replace(p, source="") for p in Lockfile.load(project.lock_path).packages]


def _reference_lock(cli: Any, project: Any, proxied: Callable[..., LoopbackProxy]) -> list[Any]:
    """The lock the per-package path gives (the closure answered 404), to compare the fast path with."""
    proxied(lambda status, data: (404, b'{"error": "no such endpoint"}'))
    assert cli("install", "role", "reviewer", "--project", project.dir).code == 0
    lock = _lock_packages(project)
    project.lock_path.unlink()
    project.manifest_path.unlink()
    import os
    import shutil

    shutil.rmtree(project.dir / ".strawpot")
    shutil.rmtree(os.environ["STRAWPOT_CACHE_DIR"])  # the next install starts cold again
    return lock


def test_install_asks_for_all_metadata_in_one_request(cli: Any, project: Any, proxied: Callable[..., LoopbackProxy]) -> None:
    reference = _reference_lock(cli, project, proxied)
    proxy = proxied()
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 0, result.text
    assert proxy.count(f"POST {CLOSURE}") == 1
    assert proxy.count("GET /api/v1/", "/versions") == 0
    assert proxy.count(f"POST {BUNDLE}") == 1 and proxy.count("GET /api/v1/", "/archive") == 0  # 11 in one
    assert _lock_packages(project) == reference


def _corrupt(status: int, data: bytes) -> tuple[int, bytes]:
    head, _, rest = data.partition(b"\n")
    return status, head + b"\n" + bytes(b ^ 0xFF for b in rest)


@pytest.mark.parametrize("bundle", [_corrupt, lambda s, d: (501, b'{"error": "no"}'), lambda s, d: (s, d[:-100])])
def test_archives_a_bundle_did_not_bring_whole_are_fetched_one_by_one(
    bundle: Rewrite, cli: Any, project: Any, proxied: Callable[..., LoopbackProxy]
) -> None:
    reference = _reference_lock(cli, project, proxied)
    proxy = proxied(bundle=bundle)
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 0, result.text
    assert proxy.count(f"POST {BUNDLE}") == 1
    assert 1 <= proxy.count("GET /api/v1/", "/archive") <= 11
    assert _lock_packages(project) == reference


@pytest.mark.parametrize("status", [404, 501])
def test_a_registry_without_the_closure_is_asked_per_package_and_remembered(
    status: int, cli: Any, project: Any, proxied: Callable[..., LoopbackProxy]
) -> None:
    proxy = proxied(lambda _s, _d: (status, b'{"error": "not implemented"}'))
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 0, result.text
    assert proxy.count(f"POST {CLOSURE}") == 1
    assert proxy.count("GET /api/v1/", "/versions") == 11
    with HubClient(proxy.url) as client:  # remembered for the session: asked once, never again
        assert client.closure([("role", "reviewer")]) is None
        assert client.closure([("role", "lead")]) is None
        assert client.package_versions("role", "lead").versions
    assert proxy.count(f"POST {CLOSURE}") == 2


def _twice(body: dict[str, Any]) -> None:
    body["packages"].append(body["packages"][-1])


def _past_bound(body: dict[str, Any]) -> None:
    filler = body["packages"][-1]
    body["packages"] += [{"etag": filler["etag"], "versions": {**filler["versions"], "slug": f"pad-{i}"}}
                         for i in range(1000)]


def _omit_diff_reading(body: dict[str, Any]) -> None:
    body["packages"] = [p for p in body["packages"] if p["versions"]["slug"] != "diff-reading"]


@pytest.mark.parametrize(("change", "versions_requests"), [(_twice, 11), (_past_bound, 11), (_omit_diff_reading, 1)])
def test_an_untrustworthy_closure_falls_back_to_per_package_requests(
    change: Callable[[dict[str, Any]], None], versions_requests: int, cli: Any, project: Any,
    proxied: Callable[..., LoopbackProxy],
) -> None:
    reference = _reference_lock(cli, project, proxied)
    proxy = proxied(_edit(change))
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 0, result.text
    assert proxy.count("GET /api/v1/", "/versions") == versions_requests
    if versions_requests == 1:
        assert proxy.count("GET /api/v1/skills/diff-reading/versions", "/versions") == 1
    assert _lock_packages(project) == reference


def test_a_closure_lying_about_a_sha256_is_exit_5_and_nothing_is_written(
    cli: Any, project: Any, proxied: Callable[..., LoopbackProxy]
) -> None:
    def lie(body: dict[str, Any]) -> None:
        for item in body["packages"]:
            if item["versions"]["slug"] == "code-review":
                for version in item["versions"]["versions"]:
                    version["sha256"] = "0" * 64

    proxied(_edit(lie))
    result = cli("install", "role", "reviewer", "--project", project.dir)
    assert result.code == 5, result.text
    assert "code-review" in result.err and "sha256" in result.err
    assert not project.manifest_path.exists() and not project.lock_path.exists()
    assert not (project.dir / ".strawpot" / "skills").exists()


@pytest.fixture(scope="module")
def closure_off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second live registry, in this process on a loopback port, built with `create_app(closure=False)`."""
    import asyncio
    import time

    import uvicorn

    from registry_server import SQLiteStorage, create_app, create_token
    from strawpot.publishing.prepare import prepare_upload
    from tests.install.conftest import FIXTURE_ORDER, FIXTURES

    storage = SQLiteStorage(tmp_path_factory.mktemp("closure-off"))
    token = create_token(storage, "admin", admin=True)
    app = create_app(storage, rate_limit=0, closure=False)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with HubClient(url, token=token) as client:
        for rel in FIXTURE_ORDER:
            upload = prepare_upload(FIXTURES / rel, version="0.1.0" if rel.startswith("agents/") else None)
            client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])
    yield url
    server.should_exit = True
    thread.join(timeout=10)
    app.state.registry.close()
    storage.close()


def test_a_registry_with_the_extension_switched_off(
    closure_off: str, cli: Any, project: Any, proxied: Callable[..., LoopbackProxy], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    reference = _reference_lock(cli, project, proxied)
    proxy = LoopbackProxy(closure_off)
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", proxy.url)
    try:
        result = cli("install", "role", "reviewer", "--project", project.dir)
    finally:
        proxy.close()
    assert result.code == 0, result.text
    assert proxy.count(f"POST {CLOSURE}") == 1 and proxy.count("GET /api/v1/", "/versions") == 11
    assert proxy.count(f"POST {BUNDLE}") == 0 and proxy.count("GET /api/v1/", "/archive") == 11  # one by one
    assert _lock_packages(project) == reference
