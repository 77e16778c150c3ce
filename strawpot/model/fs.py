"""Crash-safe file writes, files opened without following links, and the per-project file lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None, durable: bool = True) -> None:
    """Write `data` to a temp file beside `path`, fsync it (unless not `durable`), then rename it over `path`:
    readers see the old file or the new one, never a mix, and a failure leaves the old one and no temp file.

    The file gets `mode`; without one it keeps the mode it had (a user's `chmod 644` survives), and a new
    file gets 0644 less the umask, as `open()` would have made it (mkstemp alone would leave 0600).
    `durable=False` skips the fsync, for a file rewritten often whose loss in a power cut costs nothing.
    The one atomic write of the tree (`hub_client` keeps its own, streaming, for it imports nothing of ours;
    tests/test_atomic_write.py holds the two alike).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = _existing_mode(path)
        if mode is None:
            mode = 0o644 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _existing_mode(path: Path) -> int | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mode & 0o7777


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (os.umask is process-wide)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


# O_NONBLOCK: opening a FIFO someone planted returns at once instead of waiting for a writer (no effect on files)
_NO_LINK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_regular(path: Path, mode: Literal["r", "w", "a"] = "r", *, perms: int = 0o600) -> BinaryIO:
    """Open the regular file `path` that sits in a folder someone else can write (an agent's workspace), in
    binary `mode`, never through a link: what is read or written is the file at `path` itself.

    "r" refuses (OSError) a symbolic link, FIFO, socket, device or folder at `path`. "w" removes whatever is at
    `path` and makes a new file (`perms`), so neither a link nor a hard link to a file elsewhere is written
    through; "a" appends to the file at `path` when it is a regular file with no other hard link, and otherwise
    replaces it the same way. The folders above `path` are trusted: the caller made them, and the agent cannot
    replace them (in a sandbox its workspace is a mount point).
    """
    if mode == "r":
        fd = os.open(path, os.O_RDONLY | _NO_LINK)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OSError(f"{path} is not a regular file; it was not read")
        return os.fdopen(fd, "rb")
    flags = os.O_WRONLY | (os.O_APPEND if mode == "a" else 0)
    if mode == "a":
        try:
            fd = os.open(path, flags | _NO_LINK)
        except FileNotFoundError:
            fd = -1
        except OSError:  # a link (ELOOP), a FIFO with no reader (ENXIO), a folder (EISDIR): replaced below
            fd = -1
        if fd >= 0:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                return os.fdopen(fd, "ab")
            os.close(fd)
    remove_entry(path)
    return os.fdopen(os.open(path, flags | os.O_CREAT | os.O_EXCL | _NO_LINK, perms), "ab" if mode == "a" else "wb")


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


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `path` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
