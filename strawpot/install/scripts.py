"""Run one package's install script: cwd and INSTALL_DIR = the package folder, output to a log, a timeout.

The script runs in its own process group (a new session) so a timeout or Ctrl-C ends it and everything
it started. Its output goes straight to the log file, never through our memory, however much it prints.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from strawpot.model.display import terminal_safe
from strawpot.model.errors import StrawpotError

TAIL_LINES = 15
_TAIL_BYTES = 8192


class ScriptFailed(StrawpotError):
    """An install script exited non-zero or ran past its timeout (exit 1); the message ends with its log."""


@dataclass(frozen=True)
class ScriptRun:
    """What ran and where its output is."""

    what: str  # "agent fixture-coder 0.1.0"
    script: str
    log: Path


def run_script(run: ScriptRun, package_dir: Path, *, timeout: float) -> None:
    """Run `run.script` in `package_dir`; raise ScriptFailed with the last lines of its log if it fails."""
    run.log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "INSTALL_DIR": str(package_dir)}
    with open(run.log, "wb") as log:
        log.write(f"$ {run.script}\n".encode())
        log.flush()
        process = subprocess.Popen(  # noqa: S602 - the package's install script, run only once trusted
            run.script, shell=True, cwd=package_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=os.name == "posix",
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise ScriptFailed(
                f"the install script of {run.what} ran longer than {timeout:g} s and was stopped; "
                f"the package was not installed; log: {run.log}" + _tail(run.log),
                hint="raise [scripts] timeout in strawpot.toml if it needs longer",
            ) from None
        except BaseException:  # Ctrl-C, or anything else: the script must not outlive us
            _kill_group(process)
            raise
    if code != 0:
        raise ScriptFailed(
            f"the install script of {run.what} failed (exit {code}); the package was not installed; "
            f"log: {run.log}" + _tail(run.log),
        )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    else:  # pragma: no cover - no process groups to kill
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _tail(log: Path) -> str:
    """The last lines of a log (read from its end only, whatever its size), indented."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    lines = [terminal_safe(line) for line in text.splitlines()[-TAIL_LINES:]]
    return "".join(f"\n  | {line[:400]}" for line in lines)
