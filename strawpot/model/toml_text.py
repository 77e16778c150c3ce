"""TOML text read safely: every way a file can fail to parse becomes one line with file, line and column."""

from __future__ import annotations

from pathlib import Path

from strawpot.model.errors import UsageError

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

_POSITION_RE = r"^(?P<reason>.*) \(at (?:line (?P<line>\d+), column (?P<col>\d+)|end of document)\)$"
REMEMBERED_DIR = "parsed-toml"  # under the cache folder: a file's last parse as JSON, by its path
_REMEMBERED_MOST = 64 * 1024 * 1024  # an entry larger than any lock's parse is not read


# tomllib's words for a repeated key, said plainly
_PLAIN = {"Cannot overwrite a value": "a key set twice (each key may appear once in its table)"}


def parse_toml(text: str, path: Path | str, *, error: type[UsageError] = UsageError,
               hint: str | None = None) -> dict[str, Any]:
    """`tomllib.loads(text)`, or `error("<path>:<line>:<col>: invalid TOML: <reason>")` for any bad input:
    syntax, repeated keys and tables, bad escapes, and nesting too deep for the parser."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col, reason = _position(str(exc), text)
    except RecursionError:
        line, col, reason = _depth_position(text)
    else:
        return data
    raise error(f"{path}:{line}:{col}: invalid TOML: {reason}", hint=hint) from None


def _remembered_at(text: str, path: Path | str) -> tuple[Path, str]:
    """The cache file of `path` and the key its entry must carry for `text` (this Python's tomllib, this text)."""
    import os
    import sys

    from strawpot.model.folders import cache_dir
    from strawpot.model.sha import sha256

    where = sha256(os.path.abspath(str(path)).encode("utf-8", "surrogateescape")).hexdigest()
    key = f"{sys.version_info[0]}.{sys.version_info[1]}:" + sha256(text.encode("utf-8")).hexdigest()
    return cache_dir() / REMEMBERED_DIR / f"{where}.json", key


def remembered(text: str, path: Path | str) -> dict[str, Any] | None:
    """`parse_toml(text)` as `remember` kept it for the file at `path` in the cache folder (JSON: about 30 times
    faster than tomllib for a 100-package lock, and tomllib is not imported), or None (none kept, another text's,
    unreadable). For what a command shows, not for what it installs: the cache folder is not the file (a check takes
    it only as a candidate it proves against the file, as `Lockfile.load` does)."""
    import json

    from strawpot.model.fs import read_regular_file

    entry, key = _remembered_at(text, path)
    raw, _, unreadable = read_regular_file(entry, _REMEMBERED_MOST)  # not through a link, never a FIFO
    try:
        kept = json.loads(raw) if unreadable is None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != key or not isinstance(kept.get("data"), dict):
        return None
    data: dict[str, Any] = kept["data"]
    return data


def remember(text: str, path: Path | str, data: dict[str, Any]) -> None:
    """Keep `data`, the parse of `text` read from `path` and found valid, for `remembered` (0600, one entry a file),
    when JSON holds it exactly (no dates, no NaN); a cache folder that cannot be written keeps nothing. Never for a
    file holding secrets (config.toml), never for a file its reader refused (nothing is written for hostile input)."""
    import json

    from strawpot.model.fs import atomic_write

    entry, key = _remembered_at(text, path)
    try:
        encoded = json.dumps({"key": key, "data": data})
        if json.loads(encoded)["data"] != data:
            return
        atomic_write(entry, encoded, mode=0o600, durable=False)
    except (OSError, TypeError, ValueError):
        pass


def not_utf8(path: Path | str, exc: UnicodeDecodeError) -> str:
    """`<path>:<line>: not UTF-8 text (byte N)`, the line counted in the bytes before the bad one."""
    line = bytes(exc.object[: exc.start]).count(b"\n") + 1
    return f"{path}:{line}: not UTF-8 text (byte {exc.start})"


def _position(message: str, text: str) -> tuple[int, int, str]:
    import re

    match = re.match(_POSITION_RE, message)
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
