"""TOML text read safely: every way a file can fail to parse becomes one line with file, line and column."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError

_POSITION_RE = re.compile(r"^(?P<reason>.*) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$")


# tomllib's words for a repeated key, said plainly
_PLAIN = {"Cannot overwrite a value": "a key set twice (each key may appear once in its table)"}


def parse_toml(text: str, path: Path | str, *, error: type[UsageError] = UsageError,
               hint: str | None = None) -> dict[str, Any]:
    """`tomllib.loads(text)`, or `error("<path>:<line>:<col>: invalid TOML: <reason>")` for any bad input:
    syntax, repeated keys and tables, bad escapes, and nesting too deep for the parser."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col, reason = _position(str(exc), text)
    except RecursionError:
        line, col, reason = _depth_position(text)
    raise error(f"{path}:{line}:{col}: invalid TOML: {reason}", hint=hint) from None


def not_utf8(path: Path | str, exc: UnicodeDecodeError) -> str:
    """`<path>:<line>: not UTF-8 text (byte N)`, the line counted in the bytes before the bad one."""
    line = bytes(exc.object[: exc.start]).count(b"\n") + 1
    return f"{path}:{line}: not UTF-8 text (byte {exc.start})"


def _position(message: str, text: str) -> tuple[int, int, str]:
    match = _POSITION_RE.match(message)
    if match is None:
        return 1, 1, message
    reason = _PLAIN.get(match["reason"], match["reason"])
    if match["line"] is None:  # at end of document
        return text.count("\n") + 1, 1, reason
    return int(match["line"]), int(match["col"]), reason


def _depth_position(text: str) -> tuple[int, int, str]:
    """Where nesting first passes what the parser can follow (brackets outside strings are counted;
    a rough count is enough to point at the line)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        for col, char in enumerate(line, 1):
            depth += char in "[{"
            depth -= char in "]}"
            if depth > 100:
                return number, col, "values nested more than 100 levels deep"
    return 1, 1, "values nested too deeply"
