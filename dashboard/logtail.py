"""The last bytes of a log, read from its end so a huge log is never read whole."""

from __future__ import annotations

import os
from pathlib import Path

from strawpot.model.agent_files import open_regular

TAIL_BYTES = 16 * 1024


def tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of `path` (from a line start when possible), or "" when it cannot be read or is not
    a regular file (a link an agent planted in its workspace is not followed)."""
    try:
        with open_regular(path) as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            fh.seek(start)
            data = fh.read(limit)
    except OSError:
        return ""
    if start and b"\n" in data:
        data = data.split(b"\n", 1)[1]
    return data.decode("utf-8", errors="replace")
