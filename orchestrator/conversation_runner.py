"""Runs conversations' tasks: each as a headless session of the conversation's role, one at a time per conversation.

A task's agent sees the conversation so far: the task comes first (its first line is what the agent is asked),
then the earlier tasks and their summaries, the most recent first, cut to CONTEXT_LIMIT characters. `strawpot ui`
serves the queue of every conversation in its data folder; `strawpot chat` runs its own conversation's tasks.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from orchestrator.conversations import ENDED, QUEUED, RUNNING, ConversationError, ConversationStore, Task
from orchestrator.headless import ending, first_error, headless_args, spawn, strawpot_command
from orchestrator.orphans import pid_alive
from orchestrator.run_record import State
from orchestrator.session import new_run_id

CONTEXT_LIMIT = 6000  # characters of earlier tasks and answers a task's agent is given
ANSWER_LIMIT = 1500  # characters of one earlier answer
EARLIER_LIMIT = 10  # earlier tasks at most
NEVER_BEGAN = 120.0  # seconds after which a running task whose session never recorded itself has failed
CONTEXT_HEADING = "Earlier in this conversation (most recent first):"


def prompt(task: str, earlier: Sequence[Task]) -> str:
    """What a task's agent is asked: `task`, then `earlier` (ended tasks, most recent first) as far as they fit."""
    entries: list[str] = []
    room = CONTEXT_LIMIT
    for done in list(earlier)[:EARLIER_LIMIT]:
        answer = done.summary or (f"(no answer: the run {done.state}" + (f": {done.error})" if done.error else ")"))
        if len(answer) > ANSWER_LIMIT:
            answer = answer[:ANSWER_LIMIT] + " …"
        entry = f"- task: {_one_line(done.task)}\n  answer: {answer.replace(chr(10), chr(10) + '    ')}"
        if len(entry) > room:
            break
        entries.append(entry)
        room -= len(entry)
    if not entries:
        return task
    return f"{task}\n\n---\n{CONTEXT_HEADING}\n" + "\n".join(entries)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + " …"


@dataclass(frozen=True)
class Submitted:
    """A task taken: its run id when it started at once, else how many tasks wait before it."""

    task: Task
    run_id: str | None
    ahead: int

    @property
    def queued(self) -> bool:
        return self.run_id is None


class ConversationRunner:
    """Starts each conversation's next task when the one before has ended, and records how each ended."""

    def __init__(self, store: ConversationStore, *, command: list[str] | None = None, detach: bool = True,
                 say: Callable[[str], None] = lambda line: None, poll: float = 0.5) -> None:
        self.store, self.command, self.detach, self.say, self.poll = (
            store, command or strawpot_command(), detach, say, poll)
        self._mine: set[int] = set()  # tasks whose `strawpot start` this process waits for
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def submit(self, conversation_id: int, text: str) -> Submitted:
        """Queue `text` in the conversation and start it if nothing of the conversation runs."""
        task = self.store.submit(conversation_id, text)
        self.pump(conversation_id)
        now = self.store.task(task.id)
        if now.phase != QUEUED:
            return Submitted(now, now.run_id, 0)
        ahead = [t for t in self.store.tasks(conversation_id) if t.phase != ENDED and t.id < task.id]
        return Submitted(now, None, len(ahead))

    def pump(self, conversation_id: int) -> Task | None:
        """Start the conversation's oldest queued task if none of it runs; the task started, or None."""
        conversation = self.store.get(conversation_id)
        claimed = self.store.claim(conversation_id, new_run_id())
        if claimed is None:
            return None
        assert claimed.run_id is not None
        earlier = [t for t in reversed(self.store.tasks(conversation_id)) if t.phase == ENDED]
        args = headless_args(self.command, claimed.run_id, conversation.project, prompt(claimed.task, earlier),
                             role=conversation.role or None)
        errors = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by _wait once the session ends
        try:
            process = spawn(args, conversation.project, stderr=errors, detach=self.detach, ask_in_run_folder=True)
        except OSError as exc:
            errors.close()
            self.store.ended(claimed.id, State.FAILED.value, None, "", f"cannot run {args[0]}: {exc.strerror or exc}")
            return self.pump(conversation_id)
        self.store.started(claimed.id, process.pid)
        with self._lock:
            self._mine.add(claimed.id)
        self.say(f"conversation {conversation_id}: started run {claimed.run_id}")
        threading.Thread(target=self._wait, args=(claimed, conversation_id, process, errors), daemon=True,
                         name=f"conversation-{conversation_id}").start()
        return self.store.task(claimed.id)

    def _wait(self, task: Task, conversation_id: int, process: subprocess.Popen[bytes],
              errors: IO[bytes]) -> None:
        with errors:
            code = process.wait()
            errors.seek(0)
            error = first_error(errors.read().decode("utf-8", "replace"))
        if re.fullmatch(rf"run {task.run_id} \w+ \(exit code -?\d+\)", error):
            error = ""  # `start`'s own end line: the state and exit code say it already
        try:
            self._end(task, code, error if code else "")
            self.pump(conversation_id)
        except ConversationError as exc:
            self.say(f"conversation {conversation_id}: {exc.message}")
        finally:
            with self._lock:
                self._mine.discard(task.id)

    def _end(self, task: Task, code: int | None, error: str) -> bool:
        """Record `task`'s end if its run has ended; whether it has."""
        conversation = self.store.get(task.conversation_id)
        assert task.run_id is not None
        end = ending(conversation.project, task.run_id, code, error)
        if not end.over:
            if code is None and not pid_alive(task.pid) and time.time() - (task.started_at or 0) > NEVER_BEGAN:
                self.store.ended(task.id, State.FAILED.value, None, "", "its session never began")
                return True
            return False
        self.store.ended(task.id, end.state, end.exit_code, end.summary, end.error)
        self.say(f"conversation {task.conversation_id}: run {task.run_id} {end.state}")
        return True

    def settle(self, conversation_id: int | None = None) -> None:
        """Record the ends of runs no process of this folder waits for (a UI that stopped while they ran), then
        start what waits behind them; of one conversation only when `conversation_id` is given (`strawpot chat`)."""
        with self._lock:
            mine = set(self._mine)
        for task in self.store.running():
            if task.id not in mine and task.phase == RUNNING and conversation_id in (None, task.conversation_id):
                self._end(task, None, "")
        for waiting in self.store.with_queue():
            if conversation_id in (None, waiting):
                self.pump(waiting)

    def serve(self) -> None:
        """Settle and start queued tasks every `poll` seconds until `stop()`."""
        said = ""
        while not self._stop.is_set():
            try:
                self.settle()
                said = ""
            except ConversationError as exc:
                if exc.message != said:
                    self.say(f"conversations: {exc.message}")
                said = exc.message
            self._stop.wait(self.poll)

    def stop(self) -> None:
        self._stop.set()


def serve_in_background(store: ConversationStore, say: Callable[[str], None]) -> ConversationRunner:
    """`strawpot ui`'s runner: a daemon thread serving every conversation of the store while the process lives."""
    runner = ConversationRunner(store, say=say)
    threading.Thread(target=runner.serve, daemon=True, name="conversations").start()
    return runner
