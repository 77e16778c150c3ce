"""SIGTERM taken as Ctrl-C while a long-running loop (a run, the scheduler) runs, so both end the same way."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM raises KeyboardInterrupt; the previous handler comes back after it."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
