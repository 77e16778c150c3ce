"""The installed tree's walk for files no lock names lists what `os.walk` lists: links to folders neither listed nor
entered, links to files and dangling ones listed, FIFOs listed, the skipped top-level folders (a `.venv`) left out."""

from __future__ import annotations

import contextlib
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


def test_folders_nested_deeper_than_python_recurses_are_walked(tmp_path: Path) -> None:
    """An agent can nest folders past the interpreter's recursion limit (os.walk on 3.11 raises RecursionError)."""
    fds = [os.open(tmp_path, os.O_RDONLY)]
    try:  # made and removed one level at a time: pathlib's and shutil's own walks recurse
        for _ in range(1100):
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fds[-1]))
        assert _walk(str(tmp_path), frozenset()) == ["d/" * 1100 + "f"]
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink("f", dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
        os.close(fds[0])
