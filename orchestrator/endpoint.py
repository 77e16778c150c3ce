"""Where a run's Denden server listens: a Unix socket in a folder of the run's own, or loopback TCP with a secret.

The socket sits in a fresh folder made for the run (0700, an unguessable name) under $XDG_RUNTIME_DIR when that
is private to the user, else the temp dir: never in the project, where any sandboxed agent of the user's could
connect() to it (a read-only bind does not stop that). Every sandbox hides these folders (`socket_bases`) and binds
back in its own run's socket alone. The path is short enough for `sun_path` and means itself to gRPC's target
parsing, whatever the project's path holds; session.json records the address.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

UNIX, TCP = "unix", "tcp"
TRANSPORTS = (UNIX, TCP)
SOCKET_NAME = "denden.sock"
# sun_path holds 108 bytes on Linux and 104 on macOS, the terminating NUL included
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107
# gRPC percent-decodes `unix:` targets and stops at `?` and `#`; these characters always mean themselves
_SAFE_PATH = re.compile(r"[A-Za-z0-9/._-]+")
_PRIVATE_PREFIX = "strawpot-"


@dataclass(frozen=True)
class UnixSocket:
    """Listen on the socket at `path`; `private_dir` is a short folder made for it, removed with it."""

    path: Path
    private_dir: Path | None = None

    @property
    def target(self) -> str:
        return f"unix:{self.path}"

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self.private_dir is not None:
            with contextlib.suppress(OSError):
                self.private_dir.rmdir()


@dataclass(frozen=True)
class Loopback:
    """Listen on TCP at host:port (0 = any free port); every request must carry the run's token."""

    host: str = "127.0.0.1"
    port: int = 0


Listen = UnixSocket | Loopback


def default_transport() -> str:
    return UNIX if os.name == "posix" else TCP


def listen_for(transport: str, run_dir: Path) -> Listen:
    return unix_socket_for(run_dir) if transport == UNIX else Loopback()


def fits(path: Path) -> bool:
    """Whether `path` can be a socket that gRPC clients dial as `unix:<path>`, unchanged."""
    text = str(path)
    return path.is_absolute() and len(os.fsencode(text)) <= MAX_SOCKET_PATH and _SAFE_PATH.fullmatch(text) is not None


def unix_socket_for(run_dir: Path) -> UnixSocket:
    """The socket of the run in `run_dir`: in a new private folder of its own, under one of `socket_bases()`."""
    for base in socket_bases():
        folder = Path(tempfile.mkdtemp(prefix=_PRIVATE_PREFIX, dir=base))  # mode 0700, a name no one can guess
        if fits(folder / SOCKET_NAME):
            return UnixSocket(folder / SOCKET_NAME, folder)
        folder.rmdir()
    raise OSError(f"no folder with a path short enough for the Denden socket of {run_dir}; "
                  "set [denden] transport = \"tcp\" in strawpot.toml")


def socket_bases() -> list[str]:
    """Folders to make a socket's folder in: the user's runtime dir if it is private, then temp dirs."""
    bases = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and _private_to_us(runtime):
        bases.append(runtime)
    bases += [tempfile.gettempdir(), "/tmp"]
    return [b for i, b in enumerate(bases) if b not in bases[:i] and os.path.isdir(b)]


def _private_to_us(path: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
