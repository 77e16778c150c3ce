"""What `start` and `resume` show of a run in this process: who answers its questions, its first line, how it ended."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import rich_click as click

if TYPE_CHECKING:
    from rich.console import Console

    from orchestrator.ask import Asker
    from orchestrator.launch import Ended, Launch
    from orchestrator.progress import JsonProgress


def _prompt(message: str) -> str:
    sys.stderr.write(message)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


class RunOutput:
    """The terminal side of one run: the asker of its agents' questions, its progress observer, its messages."""

    def __init__(self, run_id: str, *, terminal: bool, progress: str, run_wait: float | None = None) -> None:
        """`run_wait`: without a terminal, how long a question waits in the run folder (`[session] ask = "run"`)."""
        from orchestrator.ask import Asker
        from orchestrator.progress import JsonProgress
        from strawpot.console import new_console

        self.err: Console = new_console(stderr=True, quiet=progress == "json")
        self.asker: Asker = Asker(_prompt if terminal else None,
                                  write=lambda text: print(text, end="", file=sys.stderr), run_wait=run_wait)
        self.observer: JsonProgress | None = JsonProgress(sys.stderr, run_id) if progress == "json" else None

    def warn(self, message: str) -> None:
        """A warning of the run: a line on stderr, or the progress stream's `warning` event (already written)."""
        if self.observer is None:
            self.err.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)

    def started(self, launch: Launch) -> None:
        self.err.print(f"run {launch.session.run_id}: role {launch.prepared.role}, Denden on {launch.server.address}",
                       highlight=False)

    def ended(self, ended: Ended, *, as_json: bool) -> None:
        """Show how the run ended; exit with its code (130 when interrupted, the orchestrator's otherwise)."""
        from orchestrator.session import State
        from strawpot.commands._options import print_json
        from strawpot.model.plural import count

        merged = ended.merged
        if ended.state == State.INTERRUPTED:
            self.err.print(f"interrupted: stopped {count(len(ended.stopped), 'agent')}", highlight=False)
            if merged.message:
                self.err.print(merged.message, highlight=False, soft_wrap=True)
            raise SystemExit(ended.exit_code)
        if merged.message:
            self.err.print(merged.message, highlight=False, soft_wrap=True)
        code = merged.error.exit_code if merged.error is not None else ended.exit_code  # what this command exits with
        if as_json:
            print_json({"run_id": ended.run_id, "role": ended.role, "state": ended.state,
                        "exit_code": code, "result": ended.output})
        elif ended.output:
            click.echo(ended.output)
        self.err.print(f"run {ended.run_id} {ended.state} (exit code {code})", highlight=False)
        if ended.paused:
            self.err.print(f"continue it with `strawpot resume {ended.run_id}`", highlight=False)
        if merged.error is not None:
            raise merged.error
        if ended.exit_code:
            raise SystemExit(ended.exit_code)
