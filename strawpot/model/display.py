"""Bounded renderings of untrusted values for messages: never longer than a line, whatever the value holds."""

from __future__ import annotations

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
