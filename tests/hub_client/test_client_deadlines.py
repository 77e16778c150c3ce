"""Deadlines: one request, and everything a client does, end on time however slowly a server trickles
(real sockets on loopback: the per-read timeout alone never fires against these servers)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_client import Cache, DeadlineExceeded, HubClient, ProtocolError, RegistryUnreachable
from tests._loopback_servers import TLS_CERT, scripted_server, silent_server, trickling_server

# How long a request ended by its deadline (1-1.5 s here) may take, from the alternatives it rules out rather than
# from the expected speed: the per-read timeout (READ_TIMEOUT) ending it instead, or a deadline per attempt
# (RETRIES + 1 attempts: over 31 s). Far above the deadlines, so a loaded machine's stalls do not reach it.
READ_TIMEOUT, RETRIES, BOUND = 60, 30, 30.0


def test_a_trickling_answer_ends_at_the_request_deadline(wire: Any) -> None:
    with trickling_server(interval=0.2, tls=wire.tls) as url, \
            HubClient(url, timeout=READ_TIMEOUT, retries=RETRIES, request_deadline=1.5, **wire.client()) as client:
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded) as info:
            client.search("x")
        took = time.monotonic() - start
    assert info.value.scope == "request" and info.value.seconds == 1.5
    assert "within 1.5 s (the request deadline)" in str(info.value)
    assert isinstance(info.value, RegistryUnreachable)
    assert took < BOUND  # the per-read timeout could not fire anyway: each byte came within 0.2 s


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_headers_trickled_a_byte_at_a_time_end_at_the_request_deadline(tls: bool) -> None:
    """The default transport bounds every read by the deadline, the status line and headers too
    (httpx's own holds each read to the network-wait limit only)."""
    with trickling_server(interval=0.1, tls=tls, head_too=True) as url, \
            HubClient(url, timeout=READ_TIMEOUT, retries=RETRIES, request_deadline=1.0, verify=str(TLS_CERT)) as client:
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.search("x")
        assert time.monotonic() - start < BOUND


def test_a_server_that_never_answers_ends_at_the_request_deadline(wire: Any) -> None:
    with silent_server(tls=wire.tls) as url, \
            HubClient(url, timeout=READ_TIMEOUT, retries=RETRIES, request_deadline=1.0, **wire.client()) as client:
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.package_versions("skill", "x")
        assert time.monotonic() - start < BOUND


def test_the_client_deadline_bounds_every_request_it_makes(wire: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[bytes] = []
    with trickling_server(interval=0.2, tls=wire.tls, requests=requests) as url, \
            HubClient(url, timeout=5, request_deadline=60, deadline=1.0, **wire.client()) as client:
        sent: list[str] = []  # counted where sending is synchronous: the server reads a request in its own time
        send = client._http.send
        monkeypatch.setattr(client._http, "send", lambda request, **kw: sent.append(str(request.url)) or send(request, **kw))
        with pytest.raises(DeadlineExceeded) as info:
            client.search("x")
        assert info.value.scope == "client"
        waited = time.monotonic() + BOUND  # the server thread reads the request in its own time
        while not requests:
            assert time.monotonic() < waited, "the server never saw the first request"
            time.sleep(0.01)
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded):  # past the client's deadline: refused without a request, or waiting
            client.search("y")
        assert time.monotonic() - start < BOUND  # its request deadline (60 s) did not apply
        assert len(sent) == 1 and "q=x" in sent[0], sent  # the second search sent nothing
        assert len(requests) == 1, requests


def test_the_https_path_checks_the_deadline_between_body_chunks() -> None:
    """Over httpx's own transport (used for https://), a slow body stops at the deadline too."""
    class Slow(httpx.SyncByteStream):
        def __iter__(self):  # type: ignore[no-untyped-def]
            for _ in range(1200):  # 60 s: a body read to its end takes twice BOUND
                time.sleep(0.05)
                yield b" "

    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=Slow()))
    with HubClient("http://hub.test", transport=transport, request_deadline=0.5, retries=0) as client:
        start = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.search("x")
        assert time.monotonic() - start < BOUND


def test_without_deadlines_a_fast_answer_is_unchanged(wire: Any) -> None:
    routes = {"/api/v1/search": (200, b'{"results": [], "count": 0}')}
    with scripted_server(routes, tls=wire.tls) as url, HubClient(url, request_deadline=5, deadline=10, **wire.client()) as client:
        assert client.search("x") == {"results": [], "count": 0}
        assert client.search("y") == {"results": [], "count": 0}  # the connection is reused after a deadline-armed read


def test_an_archive_declared_over_the_limit_is_refused_before_any_byte_is_fetched(tmp_path: Path) -> None:
    from hub_client._responses import MAX_ARCHIVE_BYTES

    requests: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: requests.append(r) or httpx.Response(200, content=b"x"))
    with (HubClient("http://hub.test", transport=transport, cache=Cache(tmp_path / "cache")) as client,
          pytest.raises(ProtocolError, match="over the limit .* refused before downloading")):
        client.fetch_archive("skill", "big", "1.0.0", "a" * 64, 200 * 1024 * 1024)
    assert requests == []
    assert MAX_ARCHIVE_BYTES < 200 * 1024 * 1024
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []


def test_an_archive_without_a_declared_size_stops_at_the_limit(tmp_path: Path) -> None:
    from hub_client import IntegrityError, SizeLimits

    transport = httpx.MockTransport(lambda r: httpx.Response(200, content=b"x" * 5000))
    with (HubClient("http://hub.test", transport=transport, cache=Cache(tmp_path / "cache"), retries=0,
                    limits=SizeLimits(archive=1000)) as client,
          pytest.raises(IntegrityError, match="expected 1000 bytes")):
        client.fetch_archive("skill", "big", "1.0.0", "a" * 64, None)
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []
