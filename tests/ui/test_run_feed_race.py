"""The run page's live feed against a session.json replaced or half-written just as it reads it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from dashboard import runs
from orchestrator.run_record import RunRecord


class _Open:
    """A request whose browser never goes away."""

    async def is_disconnected(self) -> bool:
        return False


def _write(folder: Path, state: str, mtime_ns: int) -> None:
    record = {"run_id": "run1", "role": "lead", "task": "t", "state": state, "started_at": 100.0,
              "ended_at": 120.0 if state == "succeeded" else None, "agents": []}
    (folder / "session.json").write_text(json.dumps(record))
    os.utime(folder / "session.json", ns=(mtime_ns, mtime_ns))


def _feed(root: Path, limit: int = 8) -> list[str]:
    async def collect() -> list[str]:
        said: list[str] = []
        async for event in runs._events(_Open(), root, "run1"):  # type: ignore[arg-type]
            said.append(event)
            if len(said) == limit:
                break
        return said
    return asyncio.run(asyncio.wait_for(collect(), 30))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(runs, "POLL_SECONDS", 0.01)
    run = tmp_path / "run1"
    run.mkdir()
    _write(run, "running", 1_000_000_000)
    return run


def test_a_record_replaced_between_the_read_and_the_stamp_is_read_at_the_next_poll(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = runs._readable

    def read_then_finish(root: Path, run_id: str) -> RunRecord | None:
        record = read(root, run_id)
        if record is not None and record.state == "running":  # the run ends just after the feed read it
            _write(folder, "succeeded", 2_000_000_000)
        return record

    monkeypatch.setattr(runs, "_readable", read_then_finish)
    said = _feed(folder.parent)
    assert [json.loads(e.removeprefix("data: "))["state"] for e in said if e.startswith("data: {\"")] == \
        ["running", "succeeded"]
    assert said[-1].startswith("event: end")


def test_a_half_written_record_is_read_again_at_the_next_poll_though_its_mtime_did_not_move(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "session.json").write_text("")  # the writer truncated it; its write lands in the same clock tick
    os.utime(folder / "session.json", ns=(1_000_000_000, 1_000_000_000))
    read = runs._readable

    def half_then_whole(root: Path, run_id: str) -> RunRecord | None:
        record = read(root, run_id)
        if record is None:
            _write(folder, "succeeded", 1_000_000_000)
        return record

    monkeypatch.setattr(runs, "_readable", half_then_whole)
    said = _feed(folder.parent)
    assert json.loads(said[0].removeprefix("data: "))["state"] == "succeeded"
    assert said[-1].startswith("event: end")
