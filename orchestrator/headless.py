"""A headless session started for someone else: the `strawpot start` a schedule or a conversation runs, and its end.

The session is the command a user would type in the project (so the verified-lock checks apply), with a run id
chosen beforehand so its caller can name the run before it has begun.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.orphans import owner_alive
from orchestrator.run_record import FINAL_STATES, RunRecord, RunRecordBroken, State, find_run
from strawpot.model.layout import Project

# A session started for someone else has no terminal: its agents' askUser questions wait in the run folder for an
# answer from the UI (`[session] ask = "run"`, orchestrator/questions.py) instead of being answered by defaults.
ASK_IN_RUN_FOLDER = {"STRAWPOT_SESSION_ASK": "run"}


def strawpot_command() -> list[str]:
    """The `strawpot` program a headless session runs: this interpreter's (`-P`: the project folder it starts in
    never comes first on the module path, so a cloned repository's `strawpot/` cannot stand in for ours)."""
    return [sys.executable, "-P", "-m", "strawpot.cli"]


def first_error(text: str) -> str:
    """The error a strawpot command printed (`error:` up to its `hint:`, on one line; else its last line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
    if start is None:
        return lines[-1] if lines else ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("hint:", "error:"))), len(lines))
    return " ".join(lines[start:end]).removeprefix("error:").strip()


def headless_args(command: list[str], run_id: str, project: Path, task: str, *, role: str | None = None,
                  params: Mapping[str, str] | None = None, runner: str = "") -> list[str]:
    """The `strawpot start --headless` command line of run `run_id` in `project`; `runner` ("": the project's
    `[session] runner`) is where the whole session runs."""
    args = [*command, "start", "--headless", "--run-id", run_id, "--project", str(project),
            *(["--role", role] if role else []), *(["--runner", runner] if runner else []), "--task", task]
    for key, value in (params or {}).items():
        args += ["--param", f"{key}={value}"]
    return args


def spawn(args: list[str], cwd: Path, *, stderr: int | object = subprocess.DEVNULL, detach: bool = True,
          ask_in_run_folder: bool = False) -> subprocess.Popen[bytes]:
    """Run `args` in `cwd` without a terminal; `detach` gives it a session of its own (it outlives its caller)."""
    env = {**os.environ, **(ASK_IN_RUN_FOLDER if ask_in_run_folder else {})}
    return subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=stderr, start_new_session=detach, env=env)  # type: ignore[arg-type]


def record_of(project: Path, run_id: str) -> RunRecord | None:
    """The record of run `run_id` in `project`, or None if none began (or its record is unreadable)."""
    try:
        return find_run(Project(project).sessions_dir, run_id)
    except RunRecordBroken:
        return None


@dataclass(frozen=True)
class Ending:
    """How a headless session ended, or that it has not: its state, exit code, error line and summary."""

    state: str
    exit_code: int | None = None
    error: str = ""
    summary: str = ""

    @property
    def over(self) -> bool:
        return self.state != State.RUNNING


def ending(project: Path, run_id: str, code: int | None, error: str) -> Ending:
    """What became of run `run_id` once its `strawpot start` exited with `code` (None: its exit is not known to
    this process) printing `error`: the run's own state, else failed with why no session began."""
    record = record_of(project, run_id)
    if record is None:
        if code is None:
            return Ending(State.RUNNING)
        return Ending(State.FAILED.value, code, error or "strawpot start ended before the session began")
    state = str(record.state)
    if state not in FINAL_STATES and state != State.INTERRUPTED:
        if code is None and owner_alive(record):
            return Ending(State.RUNNING)
        state, error = State.FAILED.value, error or "its strawpot start process died"
    exit_code = code if code is not None else record.exit_code
    return Ending(state, exit_code, error if state != State.SUCCEEDED else "", record.summary)
