"""`POST /archives` reads small archives a run at a time and streams large ones a chunk at a time: either way the
answer is the index line and then exactly the announced archives, in order, and a vanished one cuts it short."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from registry_server import MemoryStorage, bundle
from registry_server.storage.blobs import CHUNK
from tests.registry_server._helpers import Api, skill
from tests.registry_server.conftest import make_api

NAMES = ["small-a", "small-b", "heavy", "small-c", "small-d"]


def _items(names: list[str]) -> list[dict[str, str]]:
    return [{"kind": "skill", "slug": name, "version": "1.0.0"} for name in names]


def _split(body: bytes) -> tuple[list[dict[str, object]], bytes]:
    head, _, rest = body.partition(b"\n")
    return json.loads(head), rest


@pytest.fixture
def api() -> Iterator[Api]:
    made = make_api(MemoryStorage())
    with made.client:
        for name in NAMES:
            extra = {"data.bin": random.Random(name).randbytes(CHUNK + 50_000)} if name == "heavy" else {}
            made.ok("skill", {**skill(name), **extra})
        yield made


def test_small_and_large_archives_arrive_whole_and_in_order(api: Api) -> None:
    answer = api.client.post("/api/v1/archives", json={"items": _items(NAMES)})
    assert answer.status_code == 200, answer.text
    index, data = _split(answer.content)
    assert [entry["slug"] for entry in index] == NAMES
    sizes = [int(entry["size"]) for entry in index]  # type: ignore[call-overload]
    assert sizes[2] > CHUNK > sizes[0]  # the heavy one is streamed, the rest read in runs
    assert len(data) == sum(sizes) and int(answer.headers["content-length"]) == len(answer.content)
    offset = 0
    for entry, size in zip(index, sizes, strict=True):
        assert hashlib.sha256(data[offset:offset + size]).hexdigest() == entry["sha256"]
        offset += size
    assert api.client.app.state.registry.archives_in_flight.used == 0  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Record:
    archive_size: int


def _planned(size: int) -> bundle.Planned:
    return bundle.Planned(None, "x", _Record(size))  # type: ignore[arg-type]


def test_runs_hold_at_most_a_chunk_and_a_large_archive_goes_alone() -> None:
    sizes = [10, 10, CHUNK + 1, 10, CHUNK - 5, 10, 20]
    runs = [[p.record.archive_size for p in run] for run in bundle._groups([_planned(s) for s in sizes])]
    assert runs == [[10, 10], [CHUNK + 1], [10], [CHUNK - 5], [10, 20]]
    assert [s for run in runs for s in run] == sizes


def test_an_archive_gone_from_the_store_cuts_the_answer_and_gives_the_budget_back(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = api.client.app.state.registry  # type: ignore[attr-defined]
    real_plan = bundle.plan

    def plan_then_lose_one(reg, items, cap=bundle.MAX_BUNDLE_BYTES):  # type: ignore[no-untyped-def]
        chosen = real_plan(reg, items, cap)
        reg.storage.delete_blob(chosen[3].record.archive_sha256)  # small-c, after the index announced it
        return chosen

    monkeypatch.setattr(bundle, "plan", plan_then_lose_one)
    answer = api.client.post("/api/v1/archives", json={"items": _items(NAMES)})
    index, data = _split(answer.content)
    assert len(answer.content) < int(answer.headers["content-length"])  # short: the client sees it was cut
    sent = [int(entry["size"]) for entry in index[:3]]  # type: ignore[call-overload]
    assert len(data) == sum(sent)  # what came before the lost one came whole, and nothing of its run
    assert registry.archives_in_flight.used == 0
