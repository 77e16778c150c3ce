"""The project-local memory behind remember/recall: `.strawpot/memory/memory.jsonl` (0600 in a 0700 folder)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from orchestrator.session import PRIVATE_FILE, private_folder
from strawpot.model.fs import file_lock

DEFAULT_MAX_RESULTS = 10
_WORD = re.compile(r"[\w-]+", re.UNICODE)


@dataclass(frozen=True)
class MemoryEntry:
    entry_id: str
    content: str
    keywords: tuple[str, ...]
    scope: str
    score: float = 0.0


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class MemoryStore:
    """Append-only JSON lines; recall ranks by how many query words and keywords an entry shares."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "memory.jsonl"
        self._lock = threading.Lock()

    def remember(self, content: str, keywords: list[str], scope: str) -> str:
        entry_id = uuid.uuid4().hex
        line = json.dumps({"id": entry_id, "content": content, "keywords": keywords, "scope": scope,
                           "created_at": time.time()}, ensure_ascii=False) + "\n"
        private_folder(self.directory)
        with self._lock, file_lock(self.directory / ".lock"):
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
            try:
                os.fchmod(fd, PRIVATE_FILE)  # a file written by an older version is closed too
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        return entry_id

    def _entries(self) -> list[dict[str, object]]:
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a crash: skip it, keep the rest
            if isinstance(item, dict):
                out.append(item)
        return out

    def recall(self, query: str, keywords: list[str], scope: str, max_results: int) -> list[MemoryEntry]:
        """Entries in `scope` (any scope when empty) sharing a word or keyword; best first, newest first on ties."""
        wanted_words = _words(query)
        wanted_keys = {k.lower() for k in keywords}
        limit = max_results if max_results > 0 else DEFAULT_MAX_RESULTS
        scored: list[tuple[float, int, MemoryEntry]] = []
        for order, item in enumerate(self._entries()):
            if scope and item.get("scope") != scope:
                continue
            keys = item.get("keywords")
            raw_keys = [str(k) for k in keys] if isinstance(keys, list) else []
            item_keys = {k.lower() for k in raw_keys}
            content = str(item.get("content", ""))
            hits_words = len(wanted_words & (_words(content) | item_keys))
            hits_keys = len(wanted_keys & item_keys)
            total = len(wanted_words) + len(wanted_keys)
            if total and not (hits_words or hits_keys):
                continue
            score = (hits_words + hits_keys) / total if total else 1.0
            entry = MemoryEntry(str(item.get("id", "")), content, tuple(raw_keys), str(item.get("scope", "")), score)
            scored.append((score, order, entry))
        scored.sort(key=lambda row: (-row[0], -row[1]))
        return [entry for _, _, entry in scored[:limit]]
