"""What the integrations API says of conversations' tasks: their status in the adapters' words, and the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.conversation_runner import ConversationRunner
from orchestrator.conversations import ENDED, QUEUED, Conversation, ConversationStore, Task
from orchestrator.headless import ending
from orchestrator.run_record import State

# What the adapters call a run's state. A paused run waits for `strawpot resume`: for a chat it has stopped.
STATUS = {State.RUNNING: "running", State.SUCCEEDED: "completed", State.FAILED: "failed",
          State.TIMED_OUT: "failed", State.CANCELLED: "stopped", State.INTERRUPTED: "stopped",
          State.PAUSED: "stopped", QUEUED: "queued"}


def status_of(state: str) -> str:
    """The adapters' word for one of our run states (`failed` for one we do not know)."""
    return STATUS.get(state, "failed")


@dataclass
class Conversations:
    """What the API needs of the UI: the conversations of its data folder, their runner, and the home project."""

    data: Path
    home: Callable[[], Path | None]  # the project of a global (`imu`) conversation, None when there is none
    the_runner: Callable[[], ConversationRunner]  # the UI's one runner (Site.conversations_runner)

    @property
    def store(self) -> ConversationStore:
        return self.the_runner().store


@dataclass(frozen=True)
class Progress:
    """Where a task's run is, in the adapters' words."""

    status: str
    summary: str
    exit_code: int | None

    @property
    def over(self) -> bool:
        return self.status not in ("running", "queued")


def progress(task: Task, conversation: Conversation) -> Progress:
    """A task's status: recorded once its end is, else read from its run (which may have ended a moment ago)."""
    if task.phase == QUEUED or task.run_id is None:
        return Progress("queued", "", None)
    if task.phase == ENDED:
        return Progress(status_of(task.state), task.summary, task.exit_code)
    end = ending(conversation.project, task.run_id, None, "")
    if not end.over:
        return Progress("running", "", None)
    return Progress(status_of(end.state), end.summary, end.exit_code)
