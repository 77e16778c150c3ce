"""The tmux runtime of interactive runs: one tmux server and session per run, both named `strawpot-<run id>`.

A server of its own (`tmux -L strawpot-<run id>`) starts from the environment of the `strawpot start` that
creates it, so the run sees the same PATH, variables and typed secrets, whatever other tmux servers hold; and
it ends with its only session. The process inside is the whole inner `strawpot start` (Denden server, every
agent): detaching a terminal leaves the run untouched, and the orchestrator's end ends the session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

TMUX = "tmux"


class TmuxMissing(Exception):
    """tmux is not on PATH."""


def tmux_path() -> str | None:
    return shutil.which(TMUX)


def session_name(run_id: str) -> str:
    return f"strawpot-{run_id}"


class TmuxSession:
    """The tmux session of one run."""

    def __init__(self, run_id: str) -> None:
        self.name = session_name(run_id)
        tmux = tmux_path()
        if tmux is None:
            raise TmuxMissing("tmux is not on PATH")
        self._base = [tmux, "-L", self.name]

    def command(self, *args: str) -> list[str]:
        return [*self._base, *args]

    def start(self, argv: Sequence[str], cwd: Path, *, width: int = 200, height: int = 50) -> None:
        """Create the session, detached, running `argv` in `cwd`; raises OSError when tmux refuses."""
        proc = subprocess.run(
            self.command("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), "-c", str(cwd),
                         "--", *argv),
            capture_output=True, text=True, env=_outside_tmux(), stdin=subprocess.DEVNULL, timeout=30,
        )
        if proc.returncode != 0:
            raise OSError(f"tmux could not create session {self.name}: {proc.stderr.strip() or proc.returncode}")

    def alive(self) -> bool:
        proc = subprocess.run(self.command("has-session", "-t", self.name), capture_output=True,
                              env=_outside_tmux(), stdin=subprocess.DEVNULL, timeout=30)
        return proc.returncode == 0

    def attach(self) -> int:
        """Attach this terminal until the user detaches or the session ends; tmux's exit code."""
        return subprocess.call(self.command("attach-session", "-t", self.name), env=_outside_tmux())


def _outside_tmux() -> dict[str, str]:
    """Our environment without TMUX: the run's server is a different one, so attaching from inside tmux nests."""
    env = dict(os.environ)
    env.pop("TMUX", None)
    env.pop("TMUX_PANE", None)
    return env


def forget_own_socket() -> None:
    """Inside a run's session, at the run's end: remove the server's socket file (tmux 3.3 leaves it behind).

    Attaching is pointless by then; the server itself exits when its only pane, this process, does.
    """
    socket = os.environ.get("TMUX", "").split(",")[0]
    if socket and Path(socket).name.startswith("strawpot-"):
        with contextlib.suppress(OSError):
            os.unlink(socket)
