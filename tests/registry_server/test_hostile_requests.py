"""Issue 12, against a real server on loopback: hostile YAML, nested JSON, oversized and slow bodies, huge
headers and multipart boundaries are each refused with a clear 4xx, and the server keeps answering."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from registry_server import SQLiteStorage, create_app, create_token
from registry_server.limits import BodyPolicy
from registry_server.protocol import CoalescingHTTPProtocol
from registry_server.slots import UploadSlots
from tests._live_registry import LiveRegistry
from tests.model.hostile_yaml import CORPUS, main_file
from tests.registry_server._helpers import main_md
from tests.registry_server.hostile_http import (
    Answer,
    connect,
    head,
    multipart,
    nested_json,
    post,
    publish_body,
    read_answer,
    send,
    trickle,
)


def alive(url: str) -> None:
    assert httpx.get(f"{url}/api/v1/skills", timeout=10).status_code == 200


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_hostile_frontmatter_is_refused_quickly(shared_registry: LiveRegistry, name: str) -> None:
    url = shared_registry.url
    body, ctype = publish_body("hostile", main_file("hostile", CORPUS[name]).encode())
    answer = post(url, "/api/v1/skills", body, content_type=ctype, token=shared_registry.token)
    assert answer.status == 400, answer
    assert "SKILL.md: frontmatter: " in answer.error(), answer.error()
    assert any(why in answer.error() for why in ("is not allowed", "deeper than 32 levels", "more than the limit of 65536"))
    assert shared_registry.process.poll() is None
    alive(url)


@pytest.mark.parametrize("depth", [40, 100_000])
def test_nested_json_is_a_400_on_every_endpoint(shared_registry: LiveRegistry, depth: int) -> None:
    url, token = shared_registry.url, shared_registry.token
    deep = nested_json(depth)
    answers: dict[str, Answer] = {}
    for path in ("/api/v1/downloads", "/api/v1/stars/toggle", "/api/v1/skills/x/versions/1.0.0/yank",
                 "/api/v1/admin/set-role", "/api/v1/admin/ban-user"):
        body = f'{{"kind": "skill", "slug": "x", "nested": {deep}}}'.encode()[: 60 * 1024]
        answers[path] = post(url, path, body, content_type="application/json", token=token)
    body, ctype = publish_body("deep-deps", main_md("deep-deps"), dependencies=deep[: 60 * 1024])
    answers["publish dependencies"] = post(url, "/api/v1/skills", body, content_type=ctype, token=token)
    for where, answer in answers.items():
        assert answer.status == 400, (where, answer)
        assert "deeper than 32 levels" in answer.error(), (where, answer.error())
    alive(url)


def test_shallow_json_still_works(shared_registry: LiveRegistry) -> None:
    answer = post(shared_registry.url, "/api/v1/downloads", b'{"kind": "skill", "slug": "none", "x": [[["]]]]"]]]}',
                  content_type="application/json")
    assert answer.status == 200, answer


@pytest.mark.parametrize(("length", "status"), [(10_000, 400), (71, 400), (70, 201)])
def test_a_multipart_boundary_longer_than_rfc_2046_allows(shared_registry: LiveRegistry, length: int,
                                                           status: int) -> None:
    slug = f"boundary-{length}"
    body, ctype = publish_body(slug, main_md(slug), boundary="b" * length)
    answer = post(shared_registry.url, "/api/v1/skills", body, content_type=ctype, token=shared_registry.token)
    assert answer.status == status, answer
    if status == 400:
        assert f"boundary of {length} characters; RFC 2046 allows at most 70" in answer.error()


def test_part_headers_and_part_count_are_bounded(shared_registry: LiveRegistry) -> None:
    url, token = shared_registry.url, shared_registry.token
    body = multipart("B", {"slug": "parts"}, {"SKILL.md": main_md("parts")}, part_headers=f"X-Pad: {'p' * 3500}\r\n" * 3)
    answer = post(url, "/api/v1/skills", body, content_type="multipart/form-data; boundary=B", token=token)
    assert answer.status == 400 and "headers of part 1 are larger than 8192 bytes" in answer.error(), answer
    body = multipart("B", {f"f{i}": "x" for i in range(400)}, {"SKILL.md": main_md("parts")})
    answer = post(url, "/api/v1/skills", body, content_type="multipart/form-data; boundary=B", token=token)
    assert answer.status == 413 and "more than 150 parts" in answer.error(), answer


def test_an_unauthenticated_huge_declared_body_is_refused_before_it_is_sent(shared_registry: LiveRegistry) -> None:
    """400 MB announced on POST /downloads: the answer comes with no body byte sent."""
    request = head("POST", "/api/v1/downloads", {"Content-Type": "application/json", "Content-Length": str(400 << 20)})
    answer = send(shared_registry.url, request, timeout=10)
    assert answer.status == 413, answer
    assert answer.error() == "request body of 419430400 bytes is larger than the limit of 65536 bytes"
    alive(shared_registry.url)


def test_an_unauthenticated_streamed_body_is_cut_at_the_limit(shared_registry: LiveRegistry) -> None:
    """Chunked, no length: 400 MB offered, the server answers once 64 KB have arrived (we stop early)."""
    request = head("POST", "/api/v1/downloads", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        piece = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        for _ in range(400 * 16):
            sent += 65536
            yield piece

    answer = send(shared_registry.url, request, chunks(), timeout=20)
    assert answer.status == 413, answer
    assert "larger than the limit of 65536 bytes" in answer.error()
    assert sent < 64 << 20  # the answer came long before 400 MB were sent
    alive(shared_registry.url)


def test_a_huge_request_head_is_refused(shared_registry: LiveRegistry) -> None:
    request = head("GET", "/api/v1/skills", {"X-Big": "h" * 100_000})
    answer = send(shared_registry.url, request, timeout=10)
    assert answer.status in (400, 431), answer  # 431 when it came in one read, h11's 400 when not
    alive(shared_registry.url)


def test_deletes_are_final_on_the_live_server(live_registry: LiveRegistry) -> None:
    url, admin = live_registry.url, live_registry.token
    owner = live_registry.create_token("owner")
    for version in ("1.0.0", "1.1.0"):
        body, ctype = publish_body("gone", main_md("gone", version), version=version)
        assert post(url, "/api/v1/skills", body, content_type=ctype, token=owner).status == 201
    deleted = httpx.delete(f"{url}/api/v1/skills/gone", headers={"Authorization": f"Bearer {admin}"})
    assert deleted.status_code == 200
    body, ctype = publish_body("gone", main_md("gone", "1.2.0"), version="1.2.0")
    answer = post(url, "/api/v1/skills", body, content_type=ctype, token=owner)
    assert answer.status == 409, answer
    assert answer.error() == ("skill 'gone' was deleted from this registry and deletes are final: its name cannot "
                              "be published again; publish under another name")
    assert httpx.get(f"{url}/api/v1/skills/gone/versions").status_code == 404
    assert httpx.get(f"{url}/api/v1/skills/gone/versions/1.0.0/archive").status_code == 404
    assert httpx.get(f"{url}/api/v1/search", params={"q": "gone"}).json()["count"] == 0


# -- slow bodies: a server in this process with a tight policy, so the test takes seconds ----------------

PATIENCE = 60.0  # seconds a test waits for the server to reach a state: generous, a loaded machine stalls
TRICKLE = 0.2  # seconds between the 8-byte chunks of a slow upload
UNCUT = 30.0  # seconds at least that a slow upload trickles if the server never cuts it (see _slow_body)


def _slow_body(slug: str, burst: int) -> tuple[bytes, str]:
    """A publish whose bytes after the first `burst` take more than UNCUT seconds to trickle."""
    body, ctype = publish_body(slug, main_md(slug), extra={"data.bin": b"d" * (burst + 1200)})
    assert (len(body) - burst) // 8 * TRICKLE > UNCUT
    return body, ctype


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {PATIENCE:.0f} s: {what}"
        time.sleep(0.02)


@contextmanager
def serve(app: Starlette, protocol: type[CoalescingHTTPProtocol] = CoalescingHTTPProtocol) -> Iterator[str]:
    """`app` behind uvicorn and our HTTP protocol on a free loopback port, in a thread of this process."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off",
                                           http=protocol))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _wait_until(lambda: bool(server.started and server.servers), "the server to start")
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _slow_publish(url: str, token: str, slug: str, results: list[Answer], *, burst: int = 0) -> None:
    """Publish `slug`, sending its first `burst` bytes at once and the rest 8 bytes every TRICKLE s."""
    body, ctype = _slow_body(slug, burst)
    request = head("POST", "/api/v1/skills", {"Content-Type": ctype, "Content-Length": str(len(body)),
                                              "Authorization": f"Bearer {token}"})
    results.append(send(url, request + body[:burst], trickle(body[burst:], 8), pause=TRICKLE, timeout=60))


def _start(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.daemon = True
        t.start()


def _server_slots(app: Starlette) -> UploadSlots | None:
    """The server's upload slots once its first upload made them (inside its event loop; never made from here)."""
    return app.state.registry._slots  # type: ignore[no-any-return]


def _slots_held(app: Starlette, storage: SQLiteStorage, handle: str) -> Callable[[], int]:
    """How many of `handle`'s upload slots the server holds, asked anew on each call."""
    user = storage.user_by_handle(handle)
    assert user is not None
    return lambda: 0 if (slots := _server_slots(app)) is None else slots.held(user.id)


def test_slow_uploads_are_cut_and_cannot_hold_the_upload_memory(tmp_path: Path) -> None:
    """Four users send 1.2 MB at once, then trickle: together they hold the whole upload budget (5 MB here)
    until the minimum rate ends each with 408; a large publish queued behind them then goes through, and
    a small publish meanwhile needs no share of the budget at all."""
    storage = SQLiteStorage(tmp_path / "data")
    # no slow upload can be cut within 5 s of its start: the small publish below is answered well within that
    policy = BodyPolicy(window=5.0, min_rate=4096, deadline=10)
    app = create_app(storage, rate_limit=0, body_policy=policy, slot_wait=PATIENCE, upload_budget=5_000_000)
    held = 5_000_000 - 4 * 1_200_000
    with serve(app) as url:
        tokens = [create_token(storage, f"slow{i}") for i in range(4)]
        results: list[Answer] = []
        threads = [threading.Thread(target=_slow_publish, args=(url, t, f"slow{i}", results), kwargs={"burst": 1_200_000})
                   for i, t in enumerate(tokens)]
        started = time.monotonic()
        _start(threads)
        _wait_until(lambda: (made := _server_slots(app)) is not None and made.free <= held,
                    "the slow uploads to reserve their share")
        slots = _server_slots(app)
        assert slots is not None
        body, ctype = publish_body("small", main_md("small"))
        small = post(url, "/api/v1/skills", body, content_type=ctype, token=create_token(storage, "small"))
        assert small.status == 201, small
        # answered while all four still held their share (order, not time: a small publish that waited for a
        # share would have come after a slow one was cut)
        assert slots.free <= held and not results, (slots.free, results)
        body, ctype = publish_body("large", main_md("large"), extra={"data.bin": b"L" * 1_500_000})
        large = post(url, "/api/v1/skills", body, content_type=ctype, token=create_token(storage, "large"))
        large_done = time.monotonic()
        for t in threads:
            t.join(timeout=PATIENCE)
        # it waited for a slow one to be cut, which cannot happen before one window of waiting on its trickle (a
        # wall-clock floor on its own time failed on a loaded machine, where the cut came before it was even sent),
        # and no longer than until the first cut: not for a whole trickle, which no slow upload lives to finish
        assert large.status == 201, large
        assert started + policy.window <= large_done < started + UNCUT, (large_done - started, large)
        assert [r.status for r in results] == [408] * 4, results
        assert all("request body too slow" in r.error() for r in results)
        assert all(r.seconds < UNCUT for r in results), [r.seconds for r in results]
    storage.close()


def test_one_users_slow_uploads_queue_behind_each_other(tmp_path: Path) -> None:
    """Four slow uploads of one user: two are read at a time, the rest wait; another user is not held up."""
    storage = SQLiteStorage(tmp_path / "data")
    policy = BodyPolicy(window=5.0, min_rate=4096, deadline=10)  # each pair of slow uploads holds 5 s, then is cut
    app = create_app(storage, rate_limit=0, body_policy=policy, slot_wait=PATIENCE)
    with serve(app) as url:
        token = create_token(storage, "greedy")
        greedy_held = _slots_held(app, storage, "greedy")
        results: list[Answer] = []
        _start([threading.Thread(target=_slow_publish, args=(url, token, f"g{i}", results)) for i in range(4)])
        _wait_until(lambda: greedy_held() == 2, "the first two slow uploads to take the user's two slots")
        body, ctype = publish_body("other", main_md("other"))
        answer = post(url, "/api/v1/skills", body, content_type=ctype, token=create_token(storage, "other"))
        assert answer.status == 201, answer
        assert greedy_held() == 2 and not results, results  # answered while the first two still held their slots
        _wait_until(lambda: len(results) == 4, "the four slow uploads to end")
        assert sorted(r.status for r in results) == [408] * 4, results
    storage.close()


def test_a_wait_for_an_upload_slot_ends_in_503(tmp_path: Path) -> None:
    """The user's two slots are held by slow uploads; a third upload's wait for one (0.3 s) ends in a 503 long
    before the slow ones are cut (a window and deadline of 10 s of their trickle)."""
    storage = SQLiteStorage(tmp_path / "data")
    app = create_app(storage, rate_limit=0, body_policy=BodyPolicy(window=10, min_rate=1, deadline=10), slot_wait=0.3)
    with serve(app) as url:
        token = create_token(storage, "busy")
        busy_held = _slots_held(app, storage, "busy")
        results: list[Answer] = []
        threads = [threading.Thread(target=_slow_publish, args=(url, token, f"b{i}", results)) for i in range(2)]
        _start(threads)
        _wait_until(lambda: busy_held() == 2, "the two slow uploads to take the user's two slots")
        body, ctype = publish_body("third", main_md("third"))
        answer = post(url, "/api/v1/skills", body, content_type=ctype, token=token)
        assert answer.status == 503 and "retry later" in answer.error(), answer
        assert b"retry-after: 10" in answer.head.lower()
        for t in threads:
            t.join(timeout=PATIENCE)
        assert [r.status for r in results] == [408, 408], results  # they held their slots until cut
    storage.close()


class _QuickHeads(CoalescingHTTPProtocol):
    head_timeout = 0.5


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(65536) == b""
    except TimeoutError:
        return False


def test_a_request_head_that_never_completes_closes_the_connection(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "data")
    with serve(create_app(storage, rate_limit=0), _QuickHeads) as url, connect(url) as silent, \
            connect(url) as partial, connect(url) as kept:
        partial.sendall(b"GET /api/v1/skills HTTP/1.1\r\nHost: x\r\n")
        kept.sendall(head("GET", "/api/v1/skills", {}))
        assert read_answer(kept, time.monotonic()).status == 200
        time.sleep(0.8)  # idle between requests is the keep-alive timeout's business, not the head's
        kept.sendall(head("GET", "/api/v1/skills", {}))
        assert read_answer(kept, time.monotonic()).status == 200
        kept.sendall(b"GET /api/v1/skills HTTP/1.1\r\n")
        assert _closed_within(silent, 3) and _closed_within(partial, 3) and _closed_within(kept, 3)
    storage.close()


def test_a_rate_limited_upload_is_not_drained(tmp_path: Path) -> None:
    """A 429 given before the body was read closes the connection instead of reading 50 MB to reuse it."""
    storage = SQLiteStorage(tmp_path / "data")
    with serve(create_app(storage, rate_limit=0.001, burst=1)) as url:
        assert httpx.get(f"{url}/api/v1/skills").status_code == 200  # the one token of the bucket
        request = head("POST", "/api/v1/skills", {"Content-Type": "multipart/form-data; boundary=B",
                                                  "Content-Length": str(50 << 20)})
        answer = send(url, request, (bytes(1 << 20) for _ in range(50)), timeout=10)
        assert answer.status == 429 and b"connection: close" in answer.head.lower(), answer
    storage.close()
