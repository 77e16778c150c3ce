"""The installed tree's walk for files no lock names lists what `os.walk` lists: links to folders neither listed nor
entered, links to files and dangling ones listed, FIFOs listed, the skipped top-level folders (a `.venv`) left out."""

from __future__ import annotations

import os
from pathlib import Path

from strawpot.model.installed import _walk


def _os_walk(base: str, skip: frozenset[str]) -> list[str]:
    found = []
    for dirpath, dirs, files in os.walk(base):
        if dirpath == base:
            dirs[:] = [d for d in dirs if d not in skip]
        prefix = "" if dirpath == base else dirpath[len(base) + 1:].replace(os.sep, "/") + "/"
        found += [prefix + name for name in files]
    return sorted(found)


def test_the_walk_lists_what_os_walk_lists(tmp_path: Path) -> None:
    for folder in ("a/b/c", ".venv/x", "e", "a/.venv"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    for file in ("f1", "a/f2", "a/b/c/f3", ".venv/x/f4", "a/.venv/f5"):
        (tmp_path / file).write_text("x")
    (tmp_path / "linkdir").symlink_to("a")
    (tmp_path / "a" / "linkfile").symlink_to("../f1")
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "a" / "loop").symlink_to(".")
    os.mkfifo(tmp_path / "fifo")
    skip = frozenset({".venv"})
    assert sorted(_walk(str(tmp_path), skip)) == _os_walk(str(tmp_path), skip) == [
        "a/.venv/f5", "a/b/c/f3", "a/f2", "a/linkfile", "dangling", "f1", "fifo"]
