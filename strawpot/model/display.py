"""Bounded renderings of untrusted values for messages: never longer than a line, whatever the value holds."""

from __future__ import annotations

import re
import reprlib


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


# Terminal escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-character escapes, and their 8-bit forms)
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
                      r"|[\x1b][\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*"
                      r"(?:\x07|\x1b\\|\x9c)?|\x1b[ -~]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Untrusted text (package metadata, memory entries, file names an agent made) fit for a terminal: escape
    sequences removed, other control characters (a carriage return too) shown as `?`; newlines and tabs kept."""
    return _CONTROLS.sub("?", _ESCAPES.sub("", text))
