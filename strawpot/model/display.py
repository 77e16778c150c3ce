"""Bounded renderings of untrusted values for messages: never longer than a line, whatever the value holds."""

from __future__ import annotations

import re
import reprlib
import unicodedata


def _bounded_repr() -> reprlib.Repr:
    r = reprlib.Repr()  # (keyword arguments only from Python 3.12)
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 2, 4, 4, 4, 4
    r.maxstring = r.maxother = r.maxlong = 40
    return r


_REPR = _bounded_repr()


def short_repr(value: object, limit: int = 80) -> str:
    """`repr(value)` cut to at most `limit` characters; nested containers are elided, not walked."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_text(value: object, limit: int = 200) -> str:
    """A scalar as text for display (a container is shown as its short repr), at most `limit` characters."""
    text = value if isinstance(value, str) else short_repr(value, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Terminal escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-character escapes, and their 8-bit forms). The
# patterns compile on first use (re keeps them): most text a command prints is printable and needs none.
_ESCAPES = (r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
            r"|[\x1b][\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*"
            r"(?:\x07|\x1b\\|\x9c)?|\x1b[ -~]?")
_CONTROLS = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
# Characters a terminal draws as nothing (or that reorder what it draws) besides category Cf: Unicode's other
# default-ignorable code points (Hangul fillers, variation selectors, the combining grapheme joiner, the tag plane).
_IGNORABLE = ("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
              "\ufff0-\ufff8\U000e0000-\U000e0fff]")
# Format characters (bidi overrides and isolates, zero-width space and joiners, soft hyphen, BOM, tags), lone
# surrogates, and the line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs", "Zl", "Zp"})


def terminal_safe(text: str) -> str:
    """Untrusted text (package metadata, memory entries, file names an agent made) fit for a terminal: escape
    sequences removed, other control characters (a carriage return too) shown as `?`, and characters a terminal
    would draw as nothing or use to reorder the line (U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE, every
    format character) shown as `<U+202E>`, so what a user reads is what runs; newlines and tabs kept."""
    # isprintable() is False for every escape's first character and every control (Unicode's Cc), and for each
    # hidden category (Unicode's C and Z but the space): printable text has nothing to remove but the ignorables.
    if text.isprintable() and (text.isascii() or not re.search(_IGNORABLE, text)):
        return text
    text = re.sub(_CONTROLS, "?", re.sub(_ESCAPES, "", text))
    if text.isascii():
        return text
    return "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c) in _HIDDEN_CATEGORIES or re.match(_IGNORABLE, c)
                   else c for c in text)


def text_lines(text: str) -> list[str]:
    """`text` cut into the lines a shell or an editor sees: at `\n` (with a `\r` before it) only, never at the other
    characters `str.splitlines` breaks on (U+2028, U+0085, form feed...), which `terminal_safe` shows escaped in
    place, so a script shown line by line is the script that runs."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines
