"""The MemoryProvider protocol behind Denden remember/recall, `strawpot memory` and every agent's memory prompt.

`[memory] provider` names the provider: `builtin` (SQLite with full-text search in `.strawpot/memory/`,
`orchestrator/memory_sqlite.py`) or the name of an entry point in group `strawpot.memory`, whose object is
called with the project's memory folder and returns a provider. A provider that fails to load or raises is
reported once; the run then goes on without memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

ENTRY_POINT_GROUP = "strawpot.memory"
BUILTIN = "builtin"
SCOPES = ("global", "project", "role")
DEFAULT_SCOPE = "project"
DEFAULT_MAX_RESULTS = 10
MAX_ENTRY_BYTES = 8 * 1024  # one remembered entry, whoever remembers it
DEFAULT_PROMPT_BYTES = 16 * 1024  # `[memory] max_prompt_bytes`: the memory prompt given to a wrapper


@dataclass(frozen=True)
class MemoryEntry:
    entry_id: str
    content: str
    keywords: tuple[str, ...]
    scope: str
    score: float = 0.0
    role: str = ""
    created_at: float = 0.0


class MemoryProvider(Protocol):
    def get(self, session_id: str, agent_id: str, role: str, task: str) -> str:
        """The memory prompt for an agent about to start: what is relevant to its role and task ("" for nothing)."""

    def dump(self, session_id: str, agent_id: str, role: str, task: str, result: str) -> None:
        """An agent ended with `result`; a provider may learn from it."""

    def remember(self, content: str, keywords: list[str], scope: str, role: str = "") -> str: ...

    def recall(self, query: str, keywords: list[str], scope: str, max_results: int,
               role: str = "") -> list[MemoryEntry]: ...

    def forget(self, entry_id: str) -> bool: ...

    def entries(self) -> list[MemoryEntry]: ...


class NoMemory:
    """What a run uses once its provider failed: remembers nothing, recalls nothing."""

    def get(self, session_id: str, agent_id: str, role: str, task: str) -> str:
        return ""

    def dump(self, session_id: str, agent_id: str, role: str, task: str, result: str) -> None:
        return None

    def remember(self, content: str, keywords: list[str], scope: str, role: str = "") -> str:
        return ""

    def recall(self, query: str, keywords: list[str], scope: str, max_results: int,
               role: str = "") -> list[MemoryEntry]:
        return []

    def forget(self, entry_id: str) -> bool:
        return False

    def entries(self) -> list[MemoryEntry]:
        return []


class MemoryFailure(Exception):
    """The memory provider cannot be loaded or used; the message names it and says why."""


class EntryTooLarge(MemoryFailure):
    """An entry over MAX_ENTRY_BYTES, refused before anything is stored."""


def check_entry(content: str) -> None:
    """Refuse (EntryTooLarge) an entry no memory prompt could carry."""
    size = len(content.encode("utf-8", "replace"))
    if size > MAX_ENTRY_BYTES:
        raise EntryTooLarge(f"a memory entry holds at most {MAX_ENTRY_BYTES // 1024} KiB and this one is "
                            f"{size / 1024:.0f} KiB; remember a summary (or where the full text is kept)")


def bound_prompt(text: str, limit: int) -> str:
    """The memory prompt cut to `limit` bytes at whole lines (entries come most relevant first), with a note
    saying how many entries were left out; one line over the limit by itself is left out too."""
    if len(text.encode("utf-8", "replace")) <= limit:
        return text
    kept: list[str] = []
    used, left_out = 0, 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        size = len(line.encode("utf-8", "replace")) + 1
        if used + size <= limit - 200 and not left_out:
            kept.append(line)
            used += size
        elif number > 0 and (line.startswith("- ") or not kept):
            left_out += 1
    note = (f"({left_out} more remembered entr{'y' if left_out == 1 else 'ies'} left out: the memory prompt is "
            f"bounded by [memory] max_prompt_bytes = {limit}; recall them through Denden)")
    return "\n".join([*kept, note]) if kept else note
