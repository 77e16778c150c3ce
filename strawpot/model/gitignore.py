"""Keeping a project's `.strawpot/` (installed packages, run state, memory) out of the git repository it is in."""

from __future__ import annotations

import os
from pathlib import Path

from strawpot.model.fs import open_nofollow, read_own_text
from strawpot.model.layout import TREE_DIR

ENTRY = f"{TREE_DIR}/"
# Lines that already ignore `.strawpot/` of the folder their .gitignore is in, and those that also reach a
# subfolder's (anchored patterns do not).
_HERE = {TREE_DIR, f"{TREE_DIR}/", f"/{TREE_DIR}", f"/{TREE_DIR}/", f"**/{TREE_DIR}", f"**/{TREE_DIR}/"}
_BELOW = {TREE_DIR, f"{TREE_DIR}/", f"**/{TREE_DIR}", f"**/{TREE_DIR}/"}


def ignore_tree(folder: Path) -> Path | None:
    """Append `.strawpot/` to `folder`/.gitignore when `folder` is in a git repository and no .gitignore between
    it and the repository's top ignores it yet; the file written, or None. Nothing else is ever written."""
    top = _repository_top(folder)
    if top is None:
        return None
    here = folder / ".gitignore"
    text = _read(here)
    if _lines(text) & _HERE or (not text and here.exists()):  # ignored already, or a file we cannot read
        return None
    for above in folder.parents:
        if not above.is_relative_to(top):
            break
        if _lines(_read(above / ".gitignore")) & _BELOW:
            return None
    try:  # never through a link: a cloned repository's .gitignore may lead to ~/.bashrc
        fd = open_nofollow(here, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(("" if not text or text.endswith("\n") else "\n") + ENTRY + "\n")
    except OSError:
        return None  # a read-only checkout, or a link: git status shows the folder, nothing breaks
    return here


def added_note(gitignore: Path) -> str:
    """What to tell the user once `ignore_tree` wrote `gitignore`."""
    return f"Added {ENTRY} to {gitignore.name} (installed packages and run state stay out of git)"


def _repository_top(folder: Path) -> Path | None:
    """The nearest folder from `folder` upward with a `.git` (a folder, or a worktree's file)."""
    return next((each for each in (folder, *folder.parents) if (each / ".git").exists()), None)


def _read(path: Path) -> str:
    try:
        return read_own_text(path)
    except (OSError, UnicodeDecodeError):
        return ""


def _lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines()}
