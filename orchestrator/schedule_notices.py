"""A schedule's notice: one line to an integration's chat when a fire ends (`schedule add --notify INTEGRATION`).

It goes to the notifications queue of the conversations store in the schedules' data folder, where the
integration (run by `strawpot ui`) picks it up, delivers it and acknowledges it.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.conversations import ConversationError, ConversationStore
from orchestrator.schedules import Schedule, ScheduleError, ScheduleRun, notify_target

NOTICE_LIMIT = 500  # characters of the run's summary a notice carries


def notice(schedule: Schedule, run: ScheduleRun, summary: str) -> str:
    """The one line told: the schedule, how its run ended, and its summary (else its error), bounded."""
    code = "" if run.exit_code is None else f" (exit code {run.exit_code})"
    said = " ".join((summary or run.error).split())
    if len(said) > NOTICE_LIMIT:
        said = said[:NOTICE_LIMIT].rstrip() + " …"
    return f"schedule {schedule.name}: run {run.run_id or '-'} {run.outcome}{code}" + (f": {said}" if said else "")


def send_notice(data_dir: Path, schedule: Schedule, run: ScheduleRun, summary: str) -> str:
    """Queue the notice of `run`'s end if `schedule` asks for one; why it could not be queued ("" when it was,
    or none was asked for)."""
    if not schedule.notify:
        return ""
    try:
        integration, chat_id = notify_target(schedule.notify)
        ConversationStore(data_dir).notify(integration, chat_id, notice(schedule, run, summary))
    except (ConversationError, ScheduleError) as exc:  # a store unreadable, a target edited by hand: the fire is
        # recorded all the same
        return f"cannot notify {schedule.notify}: {exc.message}"
    return ""
