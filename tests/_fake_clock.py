"""A scheduler clock the test sets: calling it tells the time, and its `sleep` moves the time on instead of waiting."""

from __future__ import annotations

from datetime import datetime, timedelta


class Clock:
    """The scheduler's time: set by the test; `sleep` moves it on instead of waiting."""

    def __init__(self, at: datetime) -> None:
        self.at = at
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += timedelta(seconds=seconds)
