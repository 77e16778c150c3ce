"""The TOML subset `Lockfile.dumps` writes, read without tomllib; any other text is left to tomllib."""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

# What dumps writes: bare or quoted keys, JSON-escaped basic strings, integers, booleans, inline tables, one-row-a-line
# arrays.
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f\x7f]|\\.)*"')
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = "# This file is written by strawpot; do not edit it by hand."


class _NotOurs(Exception):
    """The text is not in the subset: tomllib reads it."""


def read_lock_text(text: str) -> dict[str, Any] | None:
    """What `tomllib.loads(text)` gives, for text in the subset `Lockfile.dumps` writes; None for any other text.

    The caller keeps a result only when `Lockfile.dumps` of it gives `text` back: then tomllib reads the same text to
    the same lock (tests/model/test_lock_text.py), so this reader cannot make a lock say anything tomllib would not."""
    lines = text.split("\n")
    if lines[0] != _HEADER or lines[-1] != "":
        return None
    data: dict[str, Any] = {}
    table = data
    rows: list[Any] | None = None  # the open array, one row a line
    try:
        for line in lines[1:-1]:
            if rows is not None:
                rows = _row(line, rows)
            elif line in ("[[package]]", "[[trust]]"):
                listed = data.setdefault(line[2:-2], [])
                if not isinstance(listed, list):
                    raise _NotOurs
                table = {}
                listed.append(table)
            elif line:
                rows = _key_value(line, table)
    except (_NotOurs, IndexError, ValueError):
        return None
    return data if rows is None else None


def _row(line: str, rows: list[Any]) -> list[Any] | None:
    """One line inside an open array: a row (`  value,`) added to `rows`, or the closing `]` (then None)."""
    if line == "]":
        return None
    if not line.startswith("  ") or not line.endswith(","):
        raise _NotOurs
    value, end = _value(line, 2, 0)
    if end != len(line) - 1:
        raise _NotOurs
    rows.append(value)
    return rows


def _key_value(line: str, table: dict[str, Any]) -> list[Any] | None:
    """`key = value` set in `table`; for `key = [` the array opened (its rows follow, one a line)."""
    key, end = _key(line, 0)
    if not line.startswith(" = ", end):
        raise _NotOurs
    rest = line[end + 3:]
    if rest in ("[", "[]"):
        rows: list[Any] = []
        _set(table, key, rows)
        return rows if rest == "[" else None
    value, end = _value(line, end + 3, 0)
    if end != len(line):
        raise _NotOurs
    _set(table, key, value)
    return None


def _set(table: dict[str, Any], key: str, value: Any) -> None:
    if key in table:
        raise _NotOurs  # TOML refuses a key set twice: tomllib says where
    table[key] = value


def _key(line: str, at: int) -> tuple[str, int]:
    """A bare key, or a quoted one (dumps quotes an install key that cannot be bare)."""
    if line.startswith('"', at):
        value, end = _value(line, at, 2)
        return value, end
    match = _KEY.match(line, at)
    if match is None:
        raise _NotOurs
    return match.group(), match.end()


def _value(line: str, at: int, depth: int) -> tuple[Any, int]:
    """The value starting at `at` and where it ends."""
    first = line[at]
    if first == '"':
        match = _STRING.match(line, at)
        if match is None:
            raise _NotOurs
        quoted = match.group()
        return json.loads(quoted) if "\\" in quoted else quoted[1:-1], match.end()
    if first == "{" and depth < 2:
        return _inline_table(line, at, depth)
    if line.startswith("true", at):
        return True, at + 4
    if line.startswith("false", at):
        return False, at + 5
    match = _INTEGER.match(line, at)
    if match is None or (match.end() < len(line) and line[match.end()] not in " ,}"):
        raise _NotOurs
    return int(match.group()), match.end()


def _inline_table(line: str, at: int, depth: int) -> tuple[dict[str, Any], int]:
    """`{ k = v, k = v }` at `at` (dumps' spacing; an empty one is `{  }`), and where it ends."""
    if line.startswith("{  }", at):
        return {}, at + 4
    if not line.startswith("{ ", at):
        raise _NotOurs
    table: dict[str, Any] = {}
    at += 2
    while True:
        key, at = _key(line, at)
        if not line.startswith(" = ", at):
            raise _NotOurs
        value, at = _value(line, at + 3, depth + 1)
        _set(table, key, value)
        if line.startswith(" }", at):
            return table, at + 2
        if not line.startswith(", ", at):
            raise _NotOurs
        at += 2
