"""A long task (an install script) shows it is alive: a spinner on a terminal, a line every 10 s in a file."""

from __future__ import annotations

import io
import time

from rich.console import Console

from strawpot.commands._long_task import HEARTBEAT, long_task
from strawpot.console import LazyConsole


def test_in_a_file_a_line_comes_every_interval_and_none_after() -> None:
    out = io.StringIO()
    console = LazyConsole.around(Console(file=out, force_terminal=False, width=200))
    with long_task(console, "install script of skill x 1.0.0 (log: /p/.strawpot/logs/x.log)", every=0.1):
        time.sleep(0.35)
    lines = out.getvalue().splitlines()
    assert lines[:3] == [f"install script of skill x 1.0.0 (log: /p/.strawpot/logs/x.log): still running after {n} s"
                         for n in (0, 0, 0)], lines
    assert 3 <= len(lines) <= 4, lines
    time.sleep(0.25)
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
