"""Several registry processes on one storage: read-after-write across them, one winner of a publish race,
and the issue's "done when": publish through one, install through the other, kill one mid-publish, gc."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from hashlib import sha256
from pathlib import Path

import httpx
import pytest

from strawpot.model.plural import count
from tests._cli import strawpot
from tests._live_registry import LiveRegistry, create_token, spawn_server, stop_server
from tests._proxy import LoopbackProxy
from tests.registry_server._helpers import main_md
from tests.registry_server.conftest import Backend
from tests.registry_server.test_compat_strawhub import Hub

STORED = 3  # blobs the publish killed mid-way stored before its writer died


def storage_args(kind: str, request: pytest.FixtureRequest) -> list[str]:
    return [] if kind == "sqlite" else request.getfixturevalue("pg_s3").args()


def publish(url: str, token: str, slug: str, version: str, files: dict[str, bytes] | None = None) -> httpx.Response:
    parts = [("files", (path, data, "text/markdown")) for path, data in (files or {}).items()]
    parts.insert(0, ("files", ("SKILL.md", main_md(slug, version), "text/markdown")))
    return httpx.post(f"{url}/api/v1/skills", data={"slug": slug, "version": version, "changelog": ""}, files=parts,
                      headers={"Authorization": f"Bearer {token}"}, timeout=60)


def listed(http: httpx.Client, url: str, slug: str) -> list[tuple[str, bool]]:
    answer = http.get(f"{url}/api/v1/skills/{slug}/versions")
    assert answer.status_code == 200, answer.text
    return [(v["version"], v["yanked"]) for v in answer.json()["versions"]]


@pytest.fixture
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, str]:
    """Two `registry serve` processes on one storage (the second with 2 workers): their URLs and an admin token."""
    args = storage_args(request.param, request)
    data = tmp_path / "data"
    token = create_token(data, "admin", admin=True, storage_args=args)
    first, url_a = spawn_server(data, tmp_path / "a.log", storage_args=args)
    request.addfinalizer(lambda: stop_server(first))
    second, url_b = spawn_server(data, tmp_path / "b.log", storage_args=args, workers=2)
    request.addfinalizer(lambda: stop_server(second))
    return url_a, url_b, token


@pytest.mark.parametrize("pair", ["sqlite", "postgres+s3"], indirect=True)
def test_a_write_through_one_process_is_read_by_the_other_at_once(pair: tuple[str, str, str]) -> None:
    url_a, url_b, token = pair
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=30) as http:
        assert publish(url_a, token, "shared", "1.0.0").status_code == 201
        for _ in range(4):  # every worker of B caches the list
            assert listed(http, url_b, "shared") == [("1.0.0", False)]
            assert "1.0.0" in http.get(f"{url_b}/skills/shared", headers={"Accept": "text/html"}).text
        assert publish(url_a, token, "shared", "1.1.0").status_code == 201
        for _ in range(4):
            assert listed(http, url_b, "shared") == [("1.0.0", False), ("1.1.0", False)]
            assert http.get(f"{url_b}/api/v1/skills/shared").json()["latestVersion"]["version"] == "1.1.0"
            assert "1.1.0" in http.get(f"{url_b}/skills/shared", headers={"Accept": "text/html"}).text
        assert http.post(f"{url_a}/api/v1/skills/shared/versions/1.1.0/yank", json={}, headers=auth).status_code == 200
        for _ in range(4):
            assert listed(http, url_b, "shared") == [("1.0.0", False), ("1.1.0", True)]
        assert http.delete(f"{url_a}/api/v1/skills/shared", headers=auth).status_code == 200
        for _ in range(4):
            assert http.get(f"{url_b}/api/v1/skills/shared/versions").status_code == 404
            assert http.get(f"{url_b}/api/v1/skills/shared/versions/1.0.0/archive").status_code == 404


@pytest.mark.parametrize("pair", ["sqlite", "postgres+s3"], indirect=True)
def test_the_same_version_from_several_processes_has_one_winner(pair: tuple[str, str, str]) -> None:
    url_a, url_b, token = pair
    start = threading.Barrier(8)

    def attempt(i: int) -> httpx.Response:
        start.wait(timeout=30)
        return publish(url_a if i % 2 else url_b, token, "contested", "1.0.0", {"notes.md": f"attempt {i}".encode()})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(attempt, range(8)))
    assert sorted(a.status_code for a in answers if a.status_code == 201) == [201]
    for lost in (a for a in answers if a.status_code != 201):
        # 409: lost the race at commit; 400: arrived after the winner committed (the pre-check saw it)
        assert lost.status_code in (400, 409) and "version 1.0.0 already exists" in lost.json()["error"], lost.text
    with httpx.Client(timeout=30) as http:
        assert listed(http, url_a, "contested") == listed(http, url_b, "contested") == [("1.0.0", False)]


@pytest.mark.compat
def test_publish_through_one_install_through_the_other_kill_one_mid_publish_then_gc(
        pg_s3: Backend, tmp_path: Path) -> None:
    import boto3

    args = pg_s3.args()
    data = tmp_path / "data"
    token = create_token(data, "admin", admin=True, storage_args=args)
    # A's blob writes go through a proxy that, once armed, lets STORED of them through and holds the rest until A
    # is killed, then drops them: the publish A dies in has stored exactly STORED blobs, however fast A is
    armed, killed, puts = threading.Event(), threading.Event(), []
    lock = threading.Lock()

    def hold(method: str, path: str) -> None:
        if method != "PUT" or not armed.is_set():
            return
        with lock:
            puts.append(path)
            if len(puts) <= STORED:
                return
        killed.wait(timeout=300)
        raise ConnectionAbortedError("the writer was killed while this blob was held")

    proxy = LoopbackProxy(pg_s3.s3_endpoint, hold=hold)
    writer_args = [*args[:-1], proxy.url]
    assert args[-2] == "--s3-endpoint"
    writer, url_a = spawn_server(data, tmp_path / "a.log", storage_args=writer_args)
    reader, url_b = spawn_server(data, tmp_path / "b.log", storage_args=args, workers=2)
    bucket, prefix = pg_s3.blobs.removeprefix("s3://").split("/", 1)
    s3 = boto3.client("s3", endpoint_url=pg_s3.s3_endpoint)

    def objects() -> int:
        return int(s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("KeyCount", 0))

    try:
        hub = Hub(LiveRegistry(url_b, token, data, reader, tmp_path / "b.log", tuple(args)), tmp_path / "home", tmp_path)
        hub.home.mkdir()
        assert publish(url_a, token, "hot", "1.0.0").status_code == 201
        installed: list[subprocess.CompletedProcess[str]] = []

        def install() -> None:  # the real strawhub client, through B, while A publishes
            installed.append(hub.run("install", "skill", "hot", cwd=hub.project("install-during")))

        installer = threading.Thread(target=install)
        installer.start()
        for minor in range(1, 4):
            assert publish(url_a, token, "hot", f"1.{minor}.0").status_code == 201
        installer.join(timeout=120)
        assert installed and installed[0].returncode == 0
        assert listed(httpx.Client(timeout=30), url_b, "hot")[-1] == ("1.3.0", False)

        # a publish of 100 files writes 101 blobs before its row: kill A once STORED of them are stored and the
        # next is held
        baseline = objects()
        many = {f"notes/{i:03}.md": f"note {i}\n".encode() * 50 for i in range(99)}
        armed.set()
        doomed = threading.Thread(target=lambda: _swallow(lambda: publish(url_a, token, "hot", "2.0.0", many)))
        doomed.start()
        deadline = time.monotonic() + 60
        while not (len(puts) > STORED and objects() == baseline + STORED):
            assert time.monotonic() < deadline and writer.poll() is None, (len(puts), objects() - baseline)
            time.sleep(0.01)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        killed.set()
        doomed.join(timeout=60)
        orphans = objects() - baseline
        with httpx.Client(timeout=30) as http:
            versions = [v for v, _ in listed(http, url_b, "hot")]
            assert versions == ["1.0.0", "1.1.0", "1.2.0", "1.3.0"]  # nothing half-visible
            assert orphans == STORED
            for version in versions:
                answer = http.get(f"{url_b}/api/v1/skills/hot/versions/{version}/archive")
                assert answer.status_code == 200 and answer.headers["etag"] == f'"{sha256(answer.content).hexdigest()}"'

        collected = strawpot("registry", "gc", "--grace", "0s", "--data", data, *args, cwd=tmp_path, timeout=120)
        assert collected.returncode == 0, collected.stderr
        assert f"removed {count(orphans, 'blob')}" in collected.stdout  # exactly the killed publish's blobs
        assert objects() == baseline
        hub.run("install", "skill", "hot", cwd=hub.project("install-after-gc"))
        folder = tmp_path / "install-after-gc" / ".strawpot" / "skills" / "hot"
        assert (folder / ".version").read_text() == "1.3.0\n"
        assert (folder / "SKILL.md").read_bytes() == main_md("hot", "1.3.0")
    finally:
        killed.set()
        stop_server(writer)
        stop_server(reader)
        proxy.close()


def _swallow(call: Callable[[], object]) -> None:
    with suppress(httpx.HTTPError):  # the server is killed under it
        call()
