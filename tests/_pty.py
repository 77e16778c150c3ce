"""Driving a command on a pseudo-terminal: read until it ends, answering each prompt once."""

from __future__ import annotations

import os
import subprocess
import time


def talk(master: int, proc: subprocess.Popen[bytes], answers: dict[bytes, bytes], timeout: float = 60) -> str:
    """Read a pty until the process ends, answering each prompt once; the whole transcript."""
    import select

    seen = b""
    pending = dict(answers)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            seen += chunk
            for prompt in [p for p in pending if p in seen]:
                os.write(master, pending.pop(prompt))
        elif proc.poll() is not None:
            break
    return seen.decode("utf-8", errors="replace")
