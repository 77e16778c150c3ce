"""A plain line to stdout on a terminal is written as rich would print it, without importing rich."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from strawpot.console import LazyConsole
from strawpot.model.display import terminal_safe


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\t"), max_size=300), st.integers(20, 200))
def test_a_plain_stdout_line_on_a_terminal_is_what_rich_prints(text: str, width: int) -> None:
    ours = _Terminal()
    lazy = LazyConsole(stderr=False)
    theirs = _Terminal()
    rich = Console(file=theirs, force_terminal=True, width=width, highlight=False, soft_wrap=True, color_system=None)
    rich.print(terminal_safe(text), markup=False, emoji=False, style=None, highlight=False)
    import sys

    saved = sys.stdout
    sys.stdout = ours
    try:
        lazy.line(text, highlight=False)
    finally:
        sys.stdout = saved
    assert lazy._real is None  # rich was not made
    assert ours.getvalue() == theirs.getvalue()
