"""The one rule for text a package carries into a registry's database: no lone surrogate, no NUL, no other
control character but tab and line ends.

SQLite's driver cannot encode a lone surrogate (how `json.dumps` writes half of an emoji, `"\\ud83d"`, and
what a YAML escape of it reads back as); PostgreSQL refuses NUL in text and in JSON. The other C0 controls
are storable but mean nothing in a name, a description or a changelog except as a trick on a terminal.
Both `strawpot validate`/`publish` (through `parse_package`) and the registry's publish apply it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# A lone surrogate (U+D800..U+DFFF can only be one in a Python str), NUL and the C0 controls but \t \n \r, DEL.
_BAD = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    found = _BAD.search(text)
    if found is None:
        return None
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        return (f"contains a lone surrogate (U+{ord(char):04X}) at character {found.start()}: write the "
                "character itself (or its \\U00XXXXXX escape), not half of a UTF-16 pair")
    what = "a NUL character" if char == "\x00" else f"the control character U+{ord(char):04X}"
    return f"contains {what} at character {found.start()}; remove it"


def value_problems(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(dotted place, problem) for every string in `value` (mapping keys included) that cannot be stored."""
    if isinstance(value, str):
        if (problem := text_problem(value)) is not None:
            yield where, problem
    elif isinstance(value, dict):
        for key, item in value.items():
            place = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and (problem := text_problem(key)) is not None:
                yield where or ".", f"a key {problem}"
                continue
            yield from value_problems(item, place)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from value_problems(item, f"{where}[{i}]")
