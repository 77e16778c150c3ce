"""Against a live server: racing publishes of one version, and a server killed mid-publish."""

from __future__ import annotations

import hashlib
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests._live_registry import LiveRegistry, spawn_server, start_registry, stop_server
from tests.registry_server._helpers import skill

MB = 1024 * 1024


def client() -> httpx.Client:
    return httpx.Client(timeout=60, trust_env=False)


def publish(url: str, token: str, files: dict[str, bytes], version: str, slug: str = "racer",
            http: httpx.Client | None = None) -> httpx.Response:
    parts = [("files", (path, data, "application/octet-stream")) for path, data in files.items()]
    with client() if http is None else _borrowed(http) as c:
        return c.post(f"{url}/api/v1/skills", data={"slug": slug, "version": version}, files=parts,
                      headers={"Authorization": f"Bearer {token}"})


@contextmanager
def _borrowed(http: httpx.Client) -> Iterator[httpx.Client]:
    yield http


def version_rows(data_dir: Path, slug: str) -> list[tuple[str, str]]:
    with sqlite3.connect(data_dir / "registry.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return db.execute(
            "SELECT v.version, v.archive_sha256 FROM versions v JOIN packages p ON p.id = v.package_id"
            " WHERE p.slug = ? ORDER BY v.id", (slug,)
        ).fetchall()


def assert_consistent(url: str, data_dir: Path, slug: str) -> list[str]:
    """Every listed version is whole: its archive and each file serve bytes matching their sha256."""
    with client() as http:
        return _check(http, url, data_dir, slug)


def _check(http: httpx.Client, url: str, data_dir: Path, slug: str) -> list[str]:
    response = http.get(f"{url}/api/v1/skills/{slug}/versions")
    if response.status_code == 404:
        assert version_rows(data_dir, slug) == []
        return []
    listed = response.json()["versions"]
    assert [(v["version"], v["sha256"]) for v in listed] == version_rows(data_dir, slug)
    for entry in listed:
        archive = http.get(f"{url}/api/v1/skills/{slug}/versions/{entry['version']}/archive").content
        assert hashlib.sha256(archive).hexdigest() == entry["sha256"] and len(archive) == entry["size"]
        for f in entry["files"]:
            got = http.get(f"{url}/api/v1/skills/{slug}/file", params={"path": f["path"], "version": entry["version"]})
            assert hashlib.sha256(got.content).hexdigest() == f["sha256"]
    return [v["version"] for v in listed]


def test_twenty_concurrent_publishes_of_one_version(live_registry: LiveRegistry) -> None:
    url, token = live_registry.url, live_registry.token
    assert publish(url, token, skill("racer", "1.0.0"), "1.0.0").status_code == 201
    barrier = threading.Barrier(20)
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def race(i: int) -> None:
        files = {**skill("racer", "1.1.0"), "notes.md": f"writer {i}\n".encode()}
        with client() as http:
            http.get(f"{url}/api/v1/skills")  # connect before the race starts
            barrier.wait()
            response = publish(url, token, files, "1.1.0", http=http)
        with lock:
            results.append(response)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    codes = sorted(r.status_code for r in results)
    assert len(codes) == 20 and codes.count(201) == 1, codes
    assert all(400 <= c < 500 for c in codes if c != 201), codes
    assert all("error" in r.json() for r in results if r.status_code != 201)
    assert assert_consistent(url, live_registry.data_dir, "racer") == ["1.0.0", "1.1.0"]
    winner = next(r for r in results if r.status_code == 201).json()
    assert winner["version"] == "1.1.0"


def _send_partial_upload(url: str, token: str, body_bytes: int, send_bytes: int) -> socket.socket:
    """Start a publish whose multipart body is `body_bytes` long and send only `send_bytes` of it."""
    boundary = b"kill-test"
    head = (b"--" + boundary + b'\r\nContent-Disposition: form-data; name="slug"\r\n\r\nvictim\r\n'
            b"--" + boundary + b'\r\nContent-Disposition: form-data; name="version"\r\n\r\n2.0.0\r\n'
            b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files"; filename="SKILL.md"\r\n\r\n'
            + skill("victim", "2.0.0")["SKILL.md"] + b"\r\n")
    parts = b""
    for i in range(4):
        parts += b"--" + boundary + f'\r\nContent-Disposition: form-data; name="files"; filename="big{i}.bin"\r\n\r\n'.encode()
        parts += b"y" * (body_bytes // 4) + b"\r\n"
    body = head + parts + b"--" + boundary + b"--\r\n"
    split = urlsplit(url)
    sock = socket.create_connection((split.hostname, split.port))
    request = (f"POST /api/v1/skills HTTP/1.1\r\nHost: {split.netloc}\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary.decode()}\r\nContent-Length: {len(body)}\r\n\r\n")
    sock.sendall(request.encode() + body[: min(send_bytes, len(body))])
    return sock


@pytest.mark.parametrize("whole_body", [False, True], ids=["mid-upload", "after-upload"])
def test_killing_the_server_mid_publish_leaves_no_half_version(tmp_path: Path, whole_body: bool) -> None:
    with start_registry(tmp_path) as reg:
        assert publish(reg.url, reg.token, skill("victim", "1.0.0"), "1.0.0", slug="victim").status_code == 201
        body = 36 * MB
        sock = _send_partial_upload(reg.url, reg.token, body, body * 2 if whole_body else body // 2)
        time.sleep(0.3 if not whole_body else 0.05)
        reg.process.kill()
        reg.process.wait(timeout=10)
        sock.close()
        process, url = spawn_server(reg.data_dir, tmp_path / "restart.log")
        try:
            versions = assert_consistent(url, reg.data_dir, "victim")
            assert versions[0] == "1.0.0" and versions in (["1.0.0"], ["1.0.0", "2.0.0"])
            if not whole_body:
                assert versions == ["1.0.0"]
            if versions == ["1.0.0"]:  # the interrupted version can be published again, cleanly
                assert publish(url, reg.token, skill("victim", "2.0.0"), "2.0.0", slug="victim").status_code == 201
                assert assert_consistent(url, reg.data_dir, "victim") == ["1.0.0", "2.0.0"]
        finally:
            stop_server(process)


def test_an_oversized_streamed_upload_is_refused_early(live_registry: LiveRegistry) -> None:
    """No Content-Length (chunked): the server answers 413 once 50 MB have arrived."""
    sent = 0

    def body():  # type: ignore[no-untyped-def]
        nonlocal sent
        yield b'--B\r\nContent-Disposition: form-data; name="files"; filename="a.bin"\r\n\r\n'
        chunk = b"z" * MB
        for _ in range(80):
            sent += len(chunk)
            yield chunk
        yield b"\r\n--B--\r\n"

    try:
        response = client().post(f"{live_registry.url}/api/v1/skills", content=body(),
                              headers={"Content-Type": "multipart/form-data; boundary=B",
                                       "Authorization": f"Bearer {live_registry.token}"})
    except httpx.HTTPError:  # the server may close the connection while the client is still sending
        return
    assert response.status_code == 413 and "larger than the limit" in response.json()["error"]
