"""The run's Denden token, kept 0600 in its private run folder so `strawpot cancel` can call the run's server.

A server on loopback TCP lets a call through only with the run's token. The run's own agents get it as
`DENDEN_TOKEN`; the owner also writes it to `<run folder>/denden.token` (the folder is 0700) and removes it
when the server stops. The file is created afresh (whatever was at its name is removed first) and read
without following a link, only when it is a regular file of this user's.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

TOKEN_FILE = "denden.token"
MAX_TOKEN_BYTES = 1024


def save_token(run_dir: Path, token: str) -> None:
    path = run_dir / TOKEN_FILE
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a link or file planted at the name is replaced, never written through
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(token)


def read_token(run_dir: Path) -> str | None:
    """The token the run's owner left, or None (no TCP server, or no readable file of ours)."""
    try:
        fd = os.open(run_dir / TOKEN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None
        text = fh.read(MAX_TOKEN_BYTES).decode("ascii", "replace").strip()
    return text or None


def drop_token(run_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(run_dir / TOKEN_FILE)
