"""What a YAML text may hold, told from its bytes without parsing it (YAML is most of a read-only command's start)."""

from __future__ import annotations


def may_spell(data: bytes, word: bytes) -> bool:
    """False when no scalar of the YAML text `data` can be `word` or hold it: YAML writes a character as itself or,
    in a double-quoted scalar, as a backslash escape (`"\\x2a"` is `*`), so without `word` and without a backslash
    in its bytes the text cannot spell it."""
    return word in data or b"\\" in data
