"""Files in a folder an agent can write (its workspace): strawpot reads, writes and appends to them without
following a link, or writing through a hard link, the agent planted there (strawpot runs unconfined; it may not).

The folders above the file are trusted: strawpot made them, and the agent cannot replace them (in a sandbox its
workspace is a mount point). Built on `fs.open_nofollow`.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from strawpot.model.fs import open_nofollow


def open_regular(path: Path, mode: Literal["r", "w", "a"] = "r", *, perms: int = 0o600) -> BinaryIO:
    """Open the regular file `path` in binary `mode`, never through a link: what is read or written is the file
    at `path` itself.

    "r" refuses (OSError) a symbolic link, FIFO, socket, device or folder at `path`. "w" removes whatever is at
    `path` and makes a new file (`perms`), so neither a link nor a hard link to a file elsewhere is written
    through; "a" appends to the file at `path` when it is a regular file with no other hard link, and otherwise
    replaces it the same way.
    """
    if mode == "r":
        return os.fdopen(open_nofollow(path, os.O_RDONLY), "rb")
    flags = os.O_WRONLY | (os.O_APPEND if mode == "a" else 0)
    if mode == "a":
        try:
            fd = open_nofollow(path, flags)
        except OSError:  # missing; or a link, a FIFO, a folder: replaced below
            fd = -1
        if fd >= 0:
            if os.fstat(fd).st_nlink == 1:
                return os.fdopen(fd, "ab")
            os.close(fd)
    remove_entry(path)
    return os.fdopen(open_nofollow(path, flags | os.O_CREAT | os.O_EXCL, perms), "ab" if mode == "a" else "wb")


def remove_entry(path: Path) -> None:
    """Remove the entry at `path` (a folder with what it holds), never following a link; nothing there is fine."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # never follows a link inside (it walks with file descriptors where it can)
    else:
        os.unlink(path)
