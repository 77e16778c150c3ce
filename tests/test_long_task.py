"""A long task (an install script) shows it is alive: a spinner on a terminal, a line every 10 s in a file."""

from __future__ import annotations

import io
import itertools
import time
from types import SimpleNamespace

import pytest
from rich.console import Console

from strawpot.commands import _long_task
from strawpot.commands._long_task import HEARTBEAT, long_task
from strawpot.console import LazyConsole


def test_in_a_file_a_line_comes_every_interval_and_none_after(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count(0, 10)  # the heartbeat's clock: each look at it is 10 s after the one before
    monkeypatch.setattr(_long_task, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    out = io.StringIO()
    console = LazyConsole.around(Console(file=out, force_terminal=False, width=200))
    message, every = "install script of skill x 1.0.0 (log: /p/.strawpot/logs/x.log)", 0.1
    began = time.monotonic()
    with long_task(console, message, every=every):
        deadline = began + 30  # generous: a loaded machine may hold the heartbeat's thread back for seconds
        while len(out.getvalue().splitlines()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    lasted = time.monotonic() - began
    lines = out.getvalue().splitlines()
    assert lines == [f"{message}: still running after {10 * n} s" for n in range(1, len(lines) + 1)], lines
    # at least `every` passes before each line (+1: a timed wait may end a hair early); a load only means fewer
    assert 3 <= len(lines) <= lasted / every + 1, (lines, lasted)
    time.sleep(3 * every)
    assert out.getvalue().splitlines() == lines  # the heartbeat stopped with the task
    assert HEARTBEAT == 10.0


def test_on_a_terminal_a_spinner_names_the_log_and_leaves_nothing() -> None:
    out = io.StringIO()
    console = LazyConsole.around(Console(file=out, force_terminal=True, width=200))
    with long_task(console, "install script of skill x 1.0.0 (log: /p/x.log)", every=0.05):
        time.sleep(0.3)
    shown = out.getvalue()
    assert "install script of skill x 1.0.0 (log: /p/x.log)" in shown and "still running" not in shown
    assert "\x1b[2K" in shown  # transient: the line is erased


def test_quiet_shows_nothing() -> None:
    out = io.StringIO()
    console = LazyConsole.around(Console(file=out, force_terminal=False))
    console.quiet = True
    with long_task(console, "x", every=0.05):
        time.sleep(0.15)
    assert out.getvalue() == ""
