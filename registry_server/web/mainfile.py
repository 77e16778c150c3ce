"""A version's main file as a page shows it: rendered body and the agent's tools, params and env (cached)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from registry_server.state import Registry
from registry_server.storage.base import VersionRecord
from strawpot.model.kinds import Kind
from strawpot.model.package import EnvSpec, ToolSpec
from strawpot.model.params import ParamSpec

MAX_CACHED_BYTES = 32 * 1024 * 1024  # rendered text kept; a 250 KB README can render to 5 MB of HTML
MAX_RENDERED = 256 * 1024  # characters of a body rendered; a 10 MB main file must not cost seconds per view


@dataclass(frozen=True)
class MainFile:
    body_html: str
    tools: tuple[ToolSpec, ...] = ()
    params: dict[str, ParamSpec] = field(default_factory=dict)
    env: tuple[EnvSpec, ...] = ()
    problem: str | None = None  # why the main file could not be read, if it could not

    def weight(self) -> int:
        """Roughly the bytes it holds: its text, and a little for each of its small parts."""
        return len(self.body_html) + len(self.problem or "") + 256 * (1 + len(self.tools) + len(self.params) + len(self.env))


def read_main(kind: Kind, record: VersionRecord, data: bytes | None) -> MainFile:
    """Parse the main file with the package model (the other files stand in by name only)."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.package import PackageInvalid, parse_package

    if data is None:
        return MainFile("", problem=f"{kind.main_file} is missing from the store")
    files = {f.path: b"" for f in record.files}
    files[kind.main_file] = data
    try:
        package = parse_package(files, kind=kind)
    except PackageInvalid:
        try:  # published by an older rule set: still show the text
            _, body = split_frontmatter(data.decode("utf-8", errors="replace"))
        except FrontmatterError as exc:
            return MainFile("", problem=f"{kind.main_file}: {exc}")
        return _rendered(MainFile(""), body)
    details = MainFile("", tuple(package.tools.values()), dict(package.params), tuple(package.env.values()))
    return _rendered(details, package.body)


def _rendered(details: MainFile, body: str) -> MainFile:
    from registry_server.web.markdown import render_markdown  # markdown-it on the first page, not at start-up

    if len(body) <= MAX_RENDERED:
        return replace(details, body_html=render_markdown(body))
    note = f"Only the first {MAX_RENDERED // 1024} KB of the text are shown; the whole file is under Files."
    return replace(details, body_html=render_markdown(body[:MAX_RENDERED]), problem=note)


class MainFiles:
    """archive sha256 → MainFile, least recently used first out past `max_bytes` of rendered text (versions are
    immutable, so an entry never goes stale)."""

    def __init__(self, reg: Registry, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.reg, self.max_bytes = reg, max_bytes
        self._items: OrderedDict[str, MainFile] = OrderedDict()
        self.size = 0
        self._lock = threading.Lock()

    def get(self, kind: Kind, record: VersionRecord) -> MainFile:
        """Blocking on a miss (reads the blob and renders it)."""
        key = record.archive_sha256
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        entry = next((f for f in record.files if f.path == kind.main_file), None)
        main = read_main(kind, record, self.reg.blobs.load(entry.sha256) if entry else None)
        with self._lock:
            if key not in self._items and main.weight() <= self.max_bytes:
                self._items[key] = main
                self.size += main.weight()
            while self.size > self.max_bytes:
                self.size -= self._items.popitem(last=False)[1].weight()
        return main
