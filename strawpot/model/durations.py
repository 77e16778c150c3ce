"""Durations as people write them in settings and flags (90s, 30m, 12h, 3d) and ages as they are said back."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds in `text` (a number with s, m, h or d; a bare number is seconds); ValueError naming it otherwise."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise ValueError(f"{text!r} is not a duration (a number with s, m, h or d, e.g. 1h)")
    return float(match[1]) * _UNITS[match[2]]


def say_age(seconds: float) -> str:
    """A short rough age: 45s, 12m, 5h, 3d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"
