"""A hostile server cannot exhaust memory: oversized answers are refused while they stream."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from hub_client import ProtocolError, SizeLimits

CHUNK = b"x" * 65536


class Endless(httpx.SyncByteStream):
    """A body that never ends; counts what was pulled so the test can see reading stopped early."""

    def __init__(self) -> None:
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        while True:
            self.pulled += len(CHUNK)
            yield CHUNK


@pytest.fixture
def small_caps() -> SizeLimits:
    return SizeLimits(json=1 << 20, file=1 << 20)


def test_an_endless_json_answer_is_refused(registry, make_client, small_caps) -> None:
    body = Endless()
    registry.on("GET", "/api/v1/skills/x", lambda r: httpx.Response(200, stream=body,
                                                                     headers={"content-type": "application/json"}))
    with pytest.raises(ProtocolError, match="larger than 1048576 bytes"):
        make_client(limits=small_caps).detail("skill", "x")
    assert body.pulled <= (1 << 20) + len(CHUNK)


def test_an_endless_v1_file_is_refused(registry, make_client, small_caps) -> None:
    body = Endless()
    registry.on("GET", "/api/v1/skills/x/file", lambda r: httpx.Response(200, stream=body))
    with pytest.raises(ProtocolError, match="larger than"):
        make_client(limits=small_caps).fetch_file("skill", "x", "SKILL.md", "1.0.0")
    assert body.pulled <= (1 << 20) + len(CHUNK)


def test_an_endless_error_body_is_refused(registry, make_client, small_caps) -> None:
    body = Endless()
    registry.on("GET", "/api/v1/skills/x", lambda r: httpx.Response(400, stream=body))
    with pytest.raises(ProtocolError, match="larger than"):
        make_client(limits=small_caps).detail("skill", "x")
    assert body.pulled <= (1 << 20) + len(CHUNK)


def test_answers_within_the_cap_still_parse(registry, make_client, small_caps) -> None:
    registry.on("GET", "/api/v1/skills/x", httpx.Response(200, json={"slug": "x"}))
    assert make_client(limits=small_caps).detail("skill", "x") == {"slug": "x"}
