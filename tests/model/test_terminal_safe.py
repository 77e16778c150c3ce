"""Untrusted text reaching a terminal: escape sequences removed, controls shown as `?`, invisible and bidi format
characters as `<U+XXXX>`, through the consoles too."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from strawpot.console import LazyConsole
from strawpot.model.display import terminal_safe, text_lines


@pytest.mark.parametrize(("text", "shown"), [
    ("a\x1b]0;set the title\x07b", "ab"),                 # OSC ended by BEL
    ("a\x1b]8;;http://x\x1b\\link", "alink"),               # OSC ended by ST
    ("x\x1b[31mred\x1b[0m", "xred"),                      # CSI
    ("p\x9b2Jq", "pq"),                                   # 8-bit CSI
    ("e\x1bPdevice\x1b\\f", "ef"),                         # DCS
    ("g\x1b7h", "gh"),                                    # two-character escape
    ("over\rwrite\x08\x7f", "over?write??"),              # carriage return, backspace, DEL
    ("lines\n\tand tabs, ünïcode", "lines\n\tand tabs, ünïcode"),
    ("rm -rf ~ #\u202e\u2066 reversed", "rm -rf ~ #<U+202E><U+2066> reversed"),  # bidi override and isolate
    ("zero\u200bwidth\u200d\u2060\ufeff", "zero<U+200B>width<U+200D><U+2060><U+FEFF>"),  # zero-width, BOM
    ("soft\u00adhyphen, tag\U000e0041\U000e007f", "soft<U+00AD>hyphen, tag<U+E0041><U+E007F>"),  # Cf
    ("line\u2028para\u2029", "line<U+2028>para<U+2029>"),                 # separators a terminal may break on
    ("filler\u3164\u115f, selector\ufe0f\U000e0100", "filler<U+3164><U+115F>, selector<U+FE0F><U+E0100>"),
    ("lone \udc80 surrogate", "lone <U+DC80> surrogate"),
    ("日本語 and émoji 🙂 stay", "日本語 and émoji 🙂 stay"),
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


def test_every_format_character_is_escaped() -> None:
    import unicodedata

    raw = [hex(i) for i in range(0x110000) if unicodedata.category(chr(i)) == "Cf" and chr(i) in terminal_safe(chr(i))]
    assert raw == []


@pytest.mark.parametrize(("text", "lines"), [
    ("", [""]), ("one", ["one"]), ("one\n", ["one"]), ("a\r\nb\n\nc", ["a", "b", "", "c"]),
    ("echo a\u2028rm x\x0cy\x85z", ["echo a\u2028rm x\x0cy\x85z"]),  # not lines to a shell: kept in place
])
def test_text_lines_cut_where_a_shell_does(text: str, lines: list[str]) -> None:
    assert text_lines(text) == lines
