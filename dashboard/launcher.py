"""How the UI starts a command that runs a session (`start`, `resume`): detached, its questions asked through the run folder."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import IO

from orchestrator.headless import spawn


def detach(args: list[str], cwd: Path, *, stderr: IO[bytes] | int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Run `args` in `cwd` in a session of its own (it outlives the UI); its agents' questions wait in the run
    folder for an answer from the page."""
    return spawn(args, cwd, stderr=stderr, ask_in_run_folder=True)


def error_line(stderr: str, code: int | None) -> str:
    """What the UI shows of a strawpot command that failed: its (last) `error:` line, with the `hint:` lines that
    follow it in parentheses; else its last line of stderr."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    if not errors:
        return lines[-1] if lines else f"the strawpot command exited {code}"
    hints = []
    for line in lines[errors[-1] + 1:]:
        if not line.startswith("hint:"):
            break
        hints.append(line)
    return lines[errors[-1]] + (f" ({'; '.join(hints)})" if hints else "")
