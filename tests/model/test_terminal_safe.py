"""Untrusted text reaching a terminal: escape sequences removed, controls shown as `?`, through the consoles too."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from strawpot.console import LazyConsole
from strawpot.model.display import terminal_safe


@pytest.mark.parametrize(("text", "shown"), [
    ("a\x1b]0;set the title\x07b", "ab"),                 # OSC ended by BEL
    ("a\x1b]8;;http://x\x1b\\link", "alink"),               # OSC ended by ST
    ("x\x1b[31mred\x1b[0m", "xred"),                      # CSI
    ("p\x9b2Jq", "pq"),                                   # 8-bit CSI
    ("e\x1bPdevice\x1b\\f", "ef"),                         # DCS
    ("g\x1b7h", "gh"),                                    # two-character escape
    ("over\rwrite\x08\x7f", "over?write??"),              # carriage return, backspace, DEL
    ("lines\n\tand tabs, ünïcode", "lines\n\tand tabs, ünïcode"),
])
def test_terminal_safe(text: str, shown: str) -> None:
    assert terminal_safe(text) == shown


def test_the_consoles_print_no_escape_sequence() -> None:
    buffer = io.StringIO()
    console = LazyConsole.around(Console(file=buffer, force_terminal=True, highlight=False))
    console.print("summary \x1b]0;pwned\x07 here", markup=False)
    console.line("line \x1b[2J here")
    assert "\x1b]0" not in buffer.getvalue() and "\x1b[2J" not in buffer.getvalue()
    assert "summary  here" in buffer.getvalue() and "line  here" in buffer.getvalue()
