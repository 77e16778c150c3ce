"""`SharedCheck`: every request waits for a change-counter read that started after it arrived, and overlapping
requests share one read."""

from __future__ import annotations

import asyncio
import threading
import time

from registry_server.fresh import SharedCheck
from registry_server.storage.base import StorageUnavailable


def test_a_request_waits_for_a_read_that_started_after_it_arrived_and_overlapping_ones_share_it() -> None:
    started: list[int] = []
    release = [threading.Event() for _ in range(3)]

    def check() -> None:
        started.append(len(started))
        assert release[len(started) - 1].wait(timeout=30)

    async def scenario() -> None:
        shared = SharedCheck(check)
        first = asyncio.ensure_future(shared.wait())
        while not started:
            await asyncio.sleep(0.001)
        late = [asyncio.ensure_future(shared.wait()) for _ in range(5)]  # arrive while read 0 runs
        await asyncio.sleep(0.01)
        release[0].set()
        await first
        deadline = time.monotonic() + 30  # read 1 starts on a pool thread: wait for it, or for a wrong early answer
        while len(started) < 2 and not any(t.done() for t in late) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not any(t.done() for t in late)  # read 0 began before they came: it cannot vouch for them
        assert started == [0, 1]  # one read for the five of them
        release[1].set()
        await asyncio.gather(*late)
        assert started == [0, 1]

    asyncio.run(scenario())


def test_a_failed_read_fails_every_request_of_its_batch_and_the_next_batch_reads_again() -> None:
    calls: list[str] = []

    def check() -> None:
        calls.append("read")
        if len(calls) == 1:
            raise StorageUnavailable("down")

    async def scenario() -> None:
        shared = SharedCheck(check)
        results = await asyncio.gather(shared.wait(), shared.wait(), return_exceptions=True)
        assert all(isinstance(r, StorageUnavailable) for r in results)
        await shared.wait()
        assert calls == ["read", "read"]

    asyncio.run(scenario())
