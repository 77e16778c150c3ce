"""The run's Denden token, kept 0600 in a 0700 folder of its own so `strawpot cancel` can call the run's server.

A server on loopback TCP lets a call through only with the run's token. The run's own agents get it as
`DENDEN_TOKEN`; the owner also writes it to `strawpot-token-<run_id>/denden.token` under the first of the socket
folders (`orchestrator.endpoint.socket_bases`: the user's runtime dir, else the temp dir), which every sandbox
hides, and removes it when the server stops. Not in the run folder: a sandboxed agent can read another
project's run folders (the file system is read-only, not hidden), and with the token and the network it could
have that run start an unconfined agent. A folder of that name is used only when it is a real folder of this
user's that no one else may enter; the file is created afresh and read without following a link.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from orchestrator.endpoint import socket_bases
from orchestrator.session import RUN_ID_RE

TOKEN_FILE = "denden.token"
FOLDER_PREFIX = "strawpot-token-"
MAX_TOKEN_BYTES = 1024


def _folders(run_id: str) -> list[Path]:
    if not RUN_ID_RE.fullmatch(run_id):
        return []
    return [Path(base) / f"{FOLDER_PREFIX}{run_id}" for base in socket_bases()]


def _ours(folder: Path) -> bool:
    """A real folder (not a link) of this user's that no one else may enter."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def save_token(run_id: str, token: str) -> Path | None:
    """Write the token where `read_token` finds it; None when no socket folder takes it (cancel then cannot)."""
    for folder in _folders(run_id):
        with contextlib.suppress(FileExistsError, PermissionError, FileNotFoundError):
            os.mkdir(folder, 0o700)
        if not _ours(folder):
            continue
        path = folder / TOKEN_FILE
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a file left at the name is replaced, never written through
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(token)
        return path
    return None


def read_token(run_id: str) -> str | None:
    """The token the run's owner left, or None (no TCP server, or no readable file of ours)."""
    for folder in _folders(run_id):
        if not _ours(folder):
            continue
        try:
            fd = os.open(folder / TOKEN_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            text = fh.read(MAX_TOKEN_BYTES).decode("ascii", "replace").strip()
        if text:
            return text
    return None


def drop_token(run_id: str) -> None:
    for folder in _folders(run_id):
        if _ours(folder):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / TOKEN_FILE)
            with contextlib.suppress(OSError):
                folder.rmdir()
