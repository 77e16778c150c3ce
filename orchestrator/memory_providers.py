"""Load the memory provider `[memory] provider` names, and guard a run against one that fails."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.memory import (
    BUILTIN,
    DEFAULT_PROMPT_BYTES,
    ENTRY_POINT_GROUP,
    MemoryEntry,
    MemoryFailure,
    MemoryProvider,
    bound_prompt,
    check_entry,
)
from orchestrator.memory_sqlite import SqliteMemory
from strawpot.model.layout import Project


def load_provider(name: str, directory: Path, global_directory: Path | None = None) -> MemoryProvider:
    """The provider `name` for the memory folder `directory`; raises MemoryFailure."""
    if name == BUILTIN:
        return SqliteMemory(directory, global_directory)
    # imported here: ~50 ms that the builtin provider (and `strawpot mcp serve`'s start) never needs
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        raise MemoryFailure(f"memory provider {name!r}: no entry point {name!r} in group {ENTRY_POINT_GROUP!r} "
                            "(install the package that provides it, or set [memory] provider = \"builtin\")")
    try:
        factory = found[0].load()
        provider: MemoryProvider = factory(directory)
    except Exception as exc:
        raise MemoryFailure(f"memory provider {name!r} failed to load: {type(exc).__name__}: {exc}") from None
    return provider


def open_memory(name: str, project: Project) -> MemoryProvider:
    """The memory of `project` by provider `name` (`[memory] provider`), the user's global memory beside it
    (but for the global scope itself); raises MemoryFailure."""
    return load_provider(name, project.memory_dir, None if project.is_global else Project.at(is_global=True).memory_dir)


class GuardedMemory:
    """A provider whose first failure is reported once; from then on the run goes on without memory."""

    def __init__(self, loader: Callable[[], MemoryProvider], report: Callable[[str], None],
                 max_prompt_bytes: int = DEFAULT_PROMPT_BYTES) -> None:
        self._lock = threading.Lock()
        self.max_prompt_bytes = max_prompt_bytes
        self._report = report
        self._provider: MemoryProvider | None = None
        self._failed = False
        try:
            self._provider = loader()
        except MemoryFailure as exc:
            self._fail(str(exc))

    def _fail(self, message: str) -> None:
        with self._lock:
            if self._failed:
                return
            self._failed = True
        self._report(f"{message}; this run goes on without memory")

    def _call(self, method: str, fallback: Any, *args: Any) -> Any:
        provider = None if self._failed else self._provider
        if provider is None:
            return fallback
        try:
            return getattr(provider, method)(*args)
        except Exception as exc:
            self._fail(f"memory provider failed in {method}: {type(exc).__name__}: {exc}")
            return fallback

    def get(self, session_id: str, agent_id: str, role: str, task: str) -> str:
        """The provider's memory prompt, bounded by `[memory] max_prompt_bytes` whatever the provider returns."""
        return bound_prompt(str(self._call("get", "", session_id, agent_id, role, task)), self.max_prompt_bytes)

    def dump(self, session_id: str, agent_id: str, role: str, task: str, result: str) -> None:
        self._call("dump", None, session_id, agent_id, role, task, result)

    def remember(self, content: str, keywords: list[str], scope: str, role: str = "") -> str:
        """Raises EntryTooLarge (the caller's mistake, not the provider's) for an entry over MAX_ENTRY_BYTES."""
        check_entry(content)
        return str(self._call("remember", "", content, keywords, scope, role))

    def recall(self, query: str, keywords: list[str], scope: str, max_results: int,
               role: str = "") -> list[MemoryEntry]:
        return list(self._call("recall", [], query, keywords, scope, max_results, role))

    def forget(self, entry_id: str) -> bool:
        return bool(self._call("forget", False, entry_id))

    def entries(self) -> list[MemoryEntry]:
        return list(self._call("entries", []))
