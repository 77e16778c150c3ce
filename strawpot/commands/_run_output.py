"""What `start` and `resume` show of a run in this process: who answers its questions, its first line, how it ended."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import rich_click as click

if TYPE_CHECKING:
    from orchestrator.ask import Asker
    from orchestrator.launch import Ended, Launch
    from orchestrator.run_record import RunRecord


def _prompt(message: str) -> str:
    sys.stderr.write(message)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


class Denials:
    """The lines that say what a sandbox refused a run's agents: each refusal once, and at most MAX_SHOWN of
    them, so an agent retrying in a loop cannot flood the terminal; the rest is in `strawpot sessions show`."""

    MAX_SHOWN = 10

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def lines(self, agent_id: str, evidence: Iterable[object]) -> list[str]:
        """The lines to print for these refusals of `agent_id` (none for one already said), made inert."""
        from strawpot.model.display import terminal_safe

        said = []
        with self._lock:
            for line in map(str, evidence):
                if line in self._seen or len(self._seen) > self.MAX_SHOWN:
                    continue
                self._seen.add(line)
                if len(self._seen) > self.MAX_SHOWN:
                    said.append(f"sandbox: more refusals; `strawpot sessions show {self.run_id}` lists them all")
                else:
                    said.append(f"sandbox denied {agent_id}: {line}")
        return [terminal_safe(text).replace("\n", " ") for text in said]

    def of_record(self, record: RunRecord) -> list[str]:
        """The lines for every refusal a run's session.json records."""
        return [line for agent in record.agents for line in self.lines(agent.agent_id, agent.sandbox_denied)]


class RunOutput:
    """The terminal side of one run: the asker of its agents' questions, its progress observer, its messages."""

    def __init__(self, run_id: str, *, terminal: bool, progress: str, run_wait: float | None = None) -> None:
        """`run_wait`: without a terminal, how long a question waits in the run folder (`[session] ask = "run"`)."""
        from orchestrator.ask import Asker
        from orchestrator.progress import JsonProgress
        from strawpot.console import LazyConsole

        self.err = LazyConsole(stderr=True)  # rich only on a terminal: to a pipe or file the lines are written as is
        self.err.quiet = progress == "json"
        self.asker: Asker = Asker(_prompt if terminal else None,
                                  write=lambda text: print(text, end="", file=sys.stderr), run_wait=run_wait)
        self.json = progress == "json"
        self.denials = Denials(run_id)
        self.observer: Callable[[str, dict[str, Any]], None] = (
            JsonProgress(sys.stderr, run_id) if self.json else self._event)

    def say(self, text: str, *, soft_wrap: bool = False) -> None:
        """A line of the run on stderr, as it is (no markup, no emoji codes; made terminal-safe): written plain to a
        pipe or file, through rich on a terminal (long lines soft-wrapped when `soft_wrap`)."""
        if self.err.plain:
            self.err.line(text)
        else:
            self.err.print(text, markup=False, emoji=False, highlight=False, soft_wrap=soft_wrap)

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        """The human side of the run's events: what the sandbox refused an agent, as it ends."""
        if kind == "sandbox_denied":
            for line in self.denials.lines(str(data.get("agent_id")), data.get("evidence") or []):
                self.say(line, soft_wrap=True)

    def warn(self, message: str) -> None:
        """A warning of the run: a line on stderr, or the progress stream's `warning` event (already written)."""
        if not self.json:
            self.say(f"warning: {message}", soft_wrap=True)

    def started(self, launch: Launch) -> None:
        self.started_at(launch.session.run_id, launch.prepared.role, f"Denden on {launch.server.address}")

    def started_at(self, run_id: str, role: str, where: str) -> None:
        """The run's first line: its id, role and where it runs (`Denden on ADDR`, `on Ray node N (HOST)`)."""
        self.say(f"run {run_id}: role {role}, {where}")

    def ended(self, ended: Ended, *, as_json: bool) -> None:
        """Show how the run ended; exit with its code (130 when interrupted, the orchestrator's otherwise)."""
        from orchestrator.session import State
        from strawpot.commands._options import print_json
        from strawpot.model.plural import count

        merged = ended.merged
        if ended.state == State.INTERRUPTED:
            self.say(f"interrupted: stopped {count(len(ended.stopped), 'agent')}")
            if merged.message:
                self.say(merged.message, soft_wrap=True)
            raise SystemExit(ended.exit_code)
        if merged.message:
            self.say(merged.message, soft_wrap=True)
        code = merged.error.exit_code if merged.error is not None else ended.exit_code  # what this command exits with
        if as_json:
            print_json({"run_id": ended.run_id, "role": ended.role, "state": ended.state,
                        "exit_code": code, "result": ended.output})
        elif ended.output:
            click.echo(ended.output)
        self.say(f"run {ended.run_id} {ended.state} (exit code {code})")
        if ended.paused:
            self.say(f"continue it with `strawpot resume {ended.run_id}`")
        if merged.error is not None:
            raise merged.error
        if ended.exit_code:
            raise SystemExit(ended.exit_code)
