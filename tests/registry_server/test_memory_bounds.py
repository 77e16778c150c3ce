"""Memory bounded by bytes: `/archives` streams with a per-request cap and a global budget (503 past it), and the
rendered-page and version-list caches hold at most their bytes."""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from registry_server import MemoryStorage, create_app, create_token
from registry_server.cache import VersionsCache
from registry_server.web.mainfile import MainFiles
from tests._live_registry import LiveRegistry, start_registry
from tests.registry_server._helpers import Api, skill
from tests.registry_server.conftest import TestClient, make_api
from tests.registry_server.web.test_pages import page

MB = 1 << 20
ITEM = {"kind": "skill", "slug": "heavy", "version": "1.0.0"}


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class _PeakRss(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, _rss_kb(pid), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.01):
            self.peak = max(self.peak, _rss_kb(self.pid))


def _publish_heavy(reg: LiveRegistry) -> None:
    """skill heavy 1.0.0: three 9.5 MB files gzip cannot shrink, a 29 MB archive."""
    rng = random.Random(25)
    files = [("files", ("SKILL.md", skill("heavy")["SKILL.md"], "text/markdown"))]
    files += [("files", (f"part{i}.bin", rng.randbytes(9 * MB + MB // 2), "application/octet-stream")) for i in range(3)]
    done = httpx.post(f"{reg.url}/api/v1/skills", data={"slug": "heavy", "version": "1.0.0"}, files=files,
                      headers={"Authorization": f"Bearer {reg.token}"}, timeout=60)
    assert done.status_code == 201, done.text


def test_concurrent_archives_of_a_30_mb_version_stream_instead_of_filling_memory(live_registry: LiveRegistry) -> None:
    """12 clients at once for a 28 MB archive used to hold 12 copies (and their join) in memory."""
    reg = live_registry
    _publish_heavy(reg)
    size = httpx.get(f"{reg.url}/api/v1/skills/heavy/versions", timeout=30).json()["versions"][0]["size"]
    assert size > 28 * MB
    sampler = _PeakRss(reg.process.pid)
    sampler.start()
    before = sampler.peak

    def fetch(_: int) -> tuple[int, int]:
        with httpx.Client(timeout=60) as http, http.stream("POST", f"{reg.url}/api/v1/archives",
                                                           json={"items": [ITEM]}) as answer:
            total = sum(len(chunk) for chunk in answer.iter_bytes(256 * 1024))
            return answer.status_code, total

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(fetch, range(12)))
    sampler.done.set()
    sampler.join()
    assert {status for status, _ in answers} <= {200, 503} and any(status == 200 for status, _ in answers)
    assert all(total > size for status, total in answers if status == 200)  # the index line and the whole archive
    grew_mb = (sampler.peak - before) / 1024
    assert grew_mb < 100, f"the server grew by {grew_mb:.0f} MB serving 12 × {size / MB:.0f} MB"


def test_a_client_that_leaves_mid_answer_gives_its_share_of_the_budget_back(tmp_path: Path) -> None:
    """Ten clients that read 1 MB of a 29 MB answer and hang up would hold 290 MB of a 256 MB budget forever."""
    import socket

    with start_registry(tmp_path) as reg:
        _publish_heavy(reg)
        body = json.dumps({"items": [ITEM]}).encode()
        # Connection: close, so a 503's short answer ends with the socket rather than the server's keep-alive
        request = (f"POST /api/v1/archives HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\n"
                   f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        host, port = reg.url.removeprefix("http://").split(":")

        def take_a_megabyte_and_leave() -> bytes:
            with socket.create_connection((host, int(port)), timeout=30) as sock:
                sock.sendall(request)
                taken = b""
                while len(taken) < MB and (chunk := sock.recv(65536)):
                    taken += chunk
                return taken

        def fetch() -> int:
            with httpx.Client(timeout=60) as http, http.stream("POST", f"{reg.url}/api/v1/archives",
                                                               json={"items": [ITEM]}) as answer:
                answer.read()
                return answer.status_code

        # The server notices a closed socket in its own time, and answers 503 while the shares it still holds
        # leave no room (8 fit in the budget): each wait ends when an earlier client's share came back.
        for _ in range(10):
            deadline = time.monotonic() + 60
            while (taken := take_a_megabyte_and_leave()).startswith(b"HTTP/1.1 503") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert taken.startswith(b"HTTP/1.1 200") and len(taken) >= MB, taken[:200]
        deadline = time.monotonic() + 60
        while (first := fetch()) == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        statuses = [first, fetch(), fetch()]  # once one has its share, nothing is still held: the next get theirs
    assert statuses == [200, 200, 200]


def test_past_the_in_flight_budget_archives_is_a_503_with_retry_after() -> None:
    storage = MemoryStorage()
    client = TestClient(create_app(storage, rate_limit=0, archives_budget=2000), raise_server_exceptions=False)
    api = Api(client, storage, "", create_token(storage, "alice"), "")
    with client:
        api.ok("skill", {**skill("heavy"), "data.bin": random.Random(1).randbytes(4000)})
        api.ok("skill", skill("light"))
        refused = api.client.post("/api/v1/archives", json={"items": [ITEM]})
        light = api.client.post("/api/v1/archives", json={"items": [{**ITEM, "slug": "light"}]})
        budget = client.app.state.registry.archives_in_flight  # type: ignore[attr-defined]
    assert refused.status_code == 503 and refused.headers["retry-after"] == "2", refused.text
    assert "at most 2000 at once" in refused.json()["error"]
    assert light.status_code == 200 and int(light.headers["content-length"]) == len(light.content)
    assert budget.used == 0  # what the answer reserved is given back once it is sent


def test_the_rendered_page_cache_is_bounded_by_bytes(api: Api) -> None:
    """A short README of long links renders to many times its size; the cache keeps bytes, not a count."""
    site = api.client.app.state.site  # type: ignore[attr-defined]
    site.mains = MainFiles(site.reg, max_bytes=1 * MB)
    body = "".join(f"![reference image {i}](https://example.org/{'x' * 300}/{i}.png)\n" for i in range(500))
    for i in range(8):
        api.ok("skill", skill(f"gallery{i}", body=body))
        page(api, f"/skills/gallery{i}")
    assert 0 < site.mains.size <= 1 * MB
    assert len(site.mains._items) < 8  # the oldest pages went out


def test_the_version_list_cache_is_bounded_by_bytes() -> None:
    api = make_api(MemoryStorage())
    reg = api.client.app.state.registry  # type: ignore[attr-defined]
    reg.versions = VersionsCache(reg.storage, max_bytes=64 * 1024)
    with api.client:
        for i in range(40):
            api.ok("skill", skill(f"pkg{i}"))
            assert api.client.get(f"/api/v1/skills/pkg{i}/versions").status_code == 200
    assert 0 < reg.versions.size <= 64 * 1024
    assert reg.versions.size == sum(e.weight() for e in reg.versions._entries.values())


def test_the_search_token_cache_is_bounded_by_bytes(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from registry_server import search

    monkeypatch.setattr(search, "MAX_FIELDS_BYTES", 200_000)
    monkeypatch.setattr(search, "_cached", {})
    monkeypatch.setattr(search, "_cached_bytes", [0])
    for i in range(12):
        api.ok("skill", skill(f"wordy{i}", description=" ".join(f"w{i}x{j}" for j in range(4000))))
    hits = api.client.get("/api/v1/search", params={"q": "wordy"}).json()["results"]
    assert len(hits) == 12
    assert 0 < search._cached_bytes[0] <= 200_000
    assert len(search._cached) < 12  # it started over rather than grow past its bytes
