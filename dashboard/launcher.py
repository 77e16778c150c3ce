"""How the UI starts a command that runs a session (`start`, `resume`): detached, its questions asked through the run folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import IO

# A session the UI starts has no terminal: its agents' askUser questions wait in the run folder for the UI's
# answer (`[session] ask = "run"`, orchestrator/questions.py) instead of being answered by their defaults.
UI_SESSION_ENV = {"STRAWPOT_SESSION_ASK": "run"}


def detach(args: list[str], cwd: Path, *, stderr: IO[bytes] | int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Run `args` in `cwd` in a session of its own (it outlives the UI), with the UI's session settings."""
    return subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                            start_new_session=True, env={**os.environ, **UI_SESSION_ENV})


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
