"""The run page's live feed against a session.json replaced or half-written just as it reads it."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dashboard import runs
from orchestrator.run_record import RunRecord
from strawpot.model.fs import atomic_write

TICK = 1_000_000_000  # one mtime for two writes: a clock tick coarser than the writes' spacing


class _Open:
    """A request whose browser never goes away."""

    async def is_disconnected(self) -> bool:
        return False


class _Enough(Exception):
    pass


def _write(folder: Path, state: str, mtime_ns: int, log: Path | None = None) -> None:
    agents = [] if log is None else [{"agent_id": "lead-1", "role": "lead", "agent": "stub", "parent": None,
                                      "state": "running", "started_at": 100.0, "workspace": str(log.parent)}]
    record = {"run_id": "run1", "role": "lead", "task": "t", "state": state, "started_at": 100.0,
              "ended_at": 120.0 if state == "succeeded" else None, "agents": agents}
    atomic_write(folder / "session.json", json.dumps(record), durable=False)
    os.utime(folder / "session.json", ns=(mtime_ns, mtime_ns))


def _feed(folder: Path, monkeypatch: pytest.MonkeyPatch, polls: int = 50,
          between: Any = None) -> list[dict[str, Any] | str]:
    """What the feed sends within `polls` polls (each state as a dict, `end` as "end"); `between(n)` runs after
    poll n."""
    count = 0

    async def poll(_: float) -> None:
        nonlocal count
        count += 1
        if between is not None:
            between(count)
        if count >= polls:
            raise _Enough

    monkeypatch.setattr(runs, "asyncio", SimpleNamespace(sleep=poll))  # this module's sleep only

    async def collect() -> list[dict[str, Any] | str]:
        said: list[dict[str, Any] | str] = []
        try:
            async for event in runs._events(_Open(), folder.parent, "run1"):  # type: ignore[arg-type]
                said.append("end" if event.startswith("event: end") else json.loads(event.removeprefix("data: ")))
        except _Enough:
            pass
        return said
    return asyncio.run(collect())


def _states(said: list[dict[str, Any] | str]) -> list[str]:
    return [e if isinstance(e, str) else e["state"] for e in said]


def _with_log(folder: Path, text: str) -> Path:
    """The run's record, running with one agent whose log holds `text`; the log's path."""
    log = folder.parent / "ws" / "agent.log"
    log.parent.mkdir()
    log.write_text(text)
    _write(folder, "running", TICK, log)
    return log


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    run = tmp_path / "run1"
    run.mkdir()
    _write(run, "running", TICK)
    return run


def test_a_record_replaced_between_the_read_and_the_stamp_is_read_at_the_next_poll(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = runs._readable

    def read_then_finish(root: Path, run_id: str) -> RunRecord | None:
        record = read(root, run_id)
        if record is not None and record.state == "running":  # the run ends just after the feed read it
            _write(folder, "succeeded", 2 * TICK)
        return record

    monkeypatch.setattr(runs, "_readable", read_then_finish)
    assert _states(_feed(folder, monkeypatch)) == ["running", "succeeded", "end"]


def test_a_record_replaced_in_the_same_clock_tick_as_the_one_read_is_read_at_the_next_poll(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = runs._readable

    def read_then_finish_in_the_same_tick(root: Path, run_id: str) -> RunRecord | None:
        record = read(root, run_id)
        if record is not None and record.state == "running":
            _write(folder, "succeeded", TICK)  # another file (inode) and size, the same mtime
        return record

    monkeypatch.setattr(runs, "_readable", read_then_finish_in_the_same_tick)
    assert _states(_feed(folder, monkeypatch)) == ["running", "succeeded", "end"]


def test_a_record_torn_in_place_is_read_once_more_though_its_mtime_size_and_inode_did_not_move(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = folder / "session.json"
    whole = json.dumps({"run_id": "run1", "role": "lead", "task": "t", "state": "succeeded", "started_at": 100.0,
                        "ended_at": 120.0, "agents": []})
    path.write_text("{" + "x" * (len(whole) - 1))  # a writer rewriting it in place, caught halfway
    os.utime(path, ns=(TICK, TICK))
    read = runs._readable

    def torn_then_whole(root: Path, run_id: str) -> RunRecord | None:
        record = read(root, run_id)
        if record is None:
            with path.open("r+") as f:  # the same file, size and clock tick
                f.write(whole)
            os.utime(path, ns=(TICK, TICK))
        return record

    monkeypatch.setattr(runs, "_readable", torn_then_whole)
    assert _states(_feed(folder, monkeypatch)) == ["succeeded", "end"]


def test_a_record_that_stays_unreadable_is_read_twice_and_the_logs_still_follow(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _with_log(folder, "planning\n")
    reads: list[int] = []
    read = runs._readable
    polled = 0

    def counted(root: Path, run_id: str) -> RunRecord | None:
        reads.append(polled)
        return read(root, run_id)

    def step(n: int) -> None:
        nonlocal polled
        polled = n
        if n == 2:
            atomic_write(folder / "session.json", "{not json", durable=False)  # broken for good
        if n == 20:
            with log.open("a") as f:
                f.write("all tests pass\n")

    monkeypatch.setattr(runs, "_readable", counted)
    said = _feed(folder, monkeypatch, polls=40, between=step)
    assert reads == [0, 2, 3], "a broken record is read once more, then only when it changes"
    assert _states(said) == ["running", "running", "running"]
    logs = [e["logs"][0]["log"] for e in said if isinstance(e, dict)]
    assert logs == ["planning\n", "planning\n", "planning\nall tests pass\n"]


def test_a_broken_record_beside_a_log_that_grows_at_every_poll_still_sends_the_log(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _with_log(folder, "")

    def step(n: int) -> None:
        if n == 2:
            atomic_write(folder / "session.json", "{not json", durable=False)
        if n >= 5:
            with log.open("a") as f:
                f.write(f"line {n}\n")

    said = _feed(folder, monkeypatch, polls=20, between=step)
    logs = [e["logs"][0]["log"] for e in said if isinstance(e, dict)]
    assert len(logs) == 1 + 1 + 15 and logs[-1].endswith("line 19\n"), logs
