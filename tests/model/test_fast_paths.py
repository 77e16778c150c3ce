"""The fast paths of `terminal_safe` and `safe_relative_path` answer what their per-character rules answered."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from strawpot.model import display
from strawpot.model.display import terminal_safe
from strawpot.model.paths import MAX_NAME_BYTES, MAX_PATH_LENGTH, UnsafePath, safe_relative_path


def reference_terminal_safe(text: str) -> str:
    """terminal_safe as it was before its fast path: every character of non-ASCII text looked at."""
    text = re.sub(display._CONTROLS, "?", re.sub(display._ESCAPES, "", text))
    if text.isascii():
        return text
    return "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) in display._HIDDEN_CATEGORIES
                   or re.match(display._IGNORABLE, c) else c for c in text)


HIDDEN = st.characters(categories=("Cf", "Zl", "Zp", "Mn", "Zs", "Co", "Cc"))
SELECTORS = st.sampled_from(["\ufe00", "\ufe0f", "\U000e0100", "\U000e01ef", "\u180b", "\u180f", "\u034f",
                             "\u115f", "\u3164", "\uffa0", "\ufff0", "\U000e0001", "\U000e007f", "\u2065"])
UNICODE = st.characters(exclude_categories=("Cs",))
PIECES = st.one_of(UNICODE, HIDDEN, SELECTORS, st.sampled_from(["\x1b[31m", "\x9b1m", "\x1b]0;t\x07", "\n", "\t", "\r",
                                                                "é", "e\u0301", "\x1b", "\x9c"]))
TEXT = st.lists(PIECES, max_size=30).map("".join)


@settings(max_examples=1500, deadline=None)  # (a busy machine: no time limit per example)
@given(TEXT)
@example("plain ascii")
@example("café")
@example("a\u202eb")
@example("\u200b")
@example("x\ufe0f")
@example("\u2028")
@example("\u00a0")
@example("\ud800")  # a lone surrogate (category Cs)
@example("ok\U000e0041")
def test_terminal_safe_is_the_per_character_rule(text: str) -> None:
    assert terminal_safe(text) == reference_terminal_safe(text)


@settings(deadline=None)
@given(st.text(st.characters(categories=("Cf", "Zl", "Zp", "Cs")), min_size=1, max_size=5))
def test_every_hidden_character_is_shown_by_its_code(text: str) -> None:
    shown = terminal_safe("a" + text)
    assert shown == "a" + "".join(f"<U+{ord(c):04X}>" for c in text)


def reference_safe_relative_path(path: str) -> str:
    """safe_relative_path as it was before its fast path: per-character control check, PurePosixPath's text."""
    if not path:
        raise UnsafePath("empty path")
    if len(path) > MAX_PATH_LENGTH:
        raise UnsafePath("too long")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise UnsafePath("control character")
    if "\\" in path:
        raise UnsafePath("backslash")
    if path.startswith("/") or (len(path) >= 2 and path[0].isascii() and path[0].isalpha() and path[1] == ":"):
        raise UnsafePath("absolute")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath("component")
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in parts):
        raise UnsafePath("name too long")
    return str(PurePosixPath(*parts))


PATH_TEXT = st.lists(st.one_of(st.sampled_from(["/", ".", "..", "a", "b.md", "\\", ":", "C:", "\x00", "\x1f", "\x7f",
                                                "\x80", "\n", " ", "é", "ファイル", "x" * 255, "y" * 256]),
                               st.characters(exclude_categories=("Cs",))), max_size=12).map("".join)


@settings(max_examples=1500, deadline=None)  # (a busy machine: no time limit per example)
@given(PATH_TEXT)
@example("a/b/c.md")
@example("a//b")
@example("a/")
@example("./a")
@example("a/./b")
@example("\x7fa")
@example("a\x85b")  # a C1 control: not refused (as before)
def test_safe_relative_path_is_the_per_character_rule(path: str) -> None:
    try:
        expected = reference_safe_relative_path(path)
    except UnsafePath:
        with pytest.raises(UnsafePath):
            safe_relative_path(path)
        return
    got = safe_relative_path(path)
    assert got == expected == str(PurePosixPath(path)) == path


@pytest.mark.parametrize("control", [chr(c) for c in (*range(32), 127)], ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_every_control_character_is_refused_anywhere(control: str, where: str) -> None:
    path = {"start": control + "a/b", "middle": "a" + control + "/b", "end": "a/b" + control}[where]
    with pytest.raises(UnsafePath, match="control character"):
        safe_relative_path(path)
