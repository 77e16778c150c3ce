"""`strawpot chat`: talk to the project's agents in a conversation, one task a line, each seeing the earlier ones."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rich_click as click

from strawpot.commands._complete import complete_role
from strawpot.commands._options import json_option, print_json, project_option
from strawpot.model.plural import count

if TYPE_CHECKING:
    from orchestrator.conversation_runner import ConversationRunner, Submitted
    from orchestrator.conversations import Conversation, ConversationStore, Task

SECTION = "sessions"
POLL = 0.2  # seconds between two looks at a waited-for task
STOP_GRACE = 10.0  # seconds a session in chat's process group gets to stop on its own after Ctrl-C
PROMPT = "chat> "


@click.command()
@click.option("--conversation", "conversation_id", type=int, metavar="N",
              help="Continue conversation N (`--list` shows them) instead of opening a new one.")
@click.option("--list", "list_them", is_flag=True, help="List the project's conversations with their last task.")
@click.option("--role", default=None, shell_complete=complete_role,
              help="The role a new conversation's tasks run as (default: [orchestrator] role).")
@click.option("--task", "task_text", default=None, metavar="TEXT",
              help="Run this one task, print its answer and exit with its run's exit code.")
@project_option
@json_option
def command(conversation_id: int | None, list_them: bool, role: str | None, task_text: str | None,
            project: Path | None, as_json: bool) -> None:
    """Talk to the project's agents in a conversation: each line you type is a task, run as a headless session.

    Each task's agents see the conversation so far (earlier tasks and their answers); the answer is printed
    when the run ends. EOF or `exit` ends the chat; Ctrl-C stops the running task's session too and ends it.
    Tasks of one conversation run one at a time: a task submitted elsewhere (`strawpot ui`) first is waited
    for ("queued behind N"). Exit codes: 1 a failed run (`--task`: the run's own code), 2 no such conversation.
    """
    from strawpot.commands._options import existing_project
    from strawpot.model.errors import UsageError

    if as_json and not (list_them or task_text is not None):
        raise UsageError("--json goes with --list or --task", hint="an interactive chat prints plain text")
    if list_them and (task_text is not None or conversation_id is not None or role):
        raise UsageError("--list takes no --task, --conversation or --role")
    from orchestrator.conversations import ConversationStore
    from strawpot.model.folders import data_dir

    found = existing_project(project)
    store = ConversationStore(data_dir())
    if list_them:
        _list(store, found.dir, as_json)
        return
    conversation = _conversation(store, found.dir, conversation_id, role)
    runner = _runner(store)
    if task_text is not None:
        done = _run(runner, conversation, task_text, quiet=as_json)
        code = exit_code(done)
        if as_json:
            print_json({"conversation": conversation.id, "task": task_json(done), **_error(done, code)})
        if code:
            raise SystemExit(code)
        return
    _interact(runner, conversation)


def _runner(store: ConversationStore) -> ConversationRunner:
    from orchestrator.conversation_runner import ConversationRunner

    # detach=False: the session is in chat's process group, so Ctrl-C on the terminal stops it too, as it would
    # stop `strawpot start`.
    return ConversationRunner(store, detach=False)


def _conversation(store: ConversationStore, project: Path, conversation_id: int | None,
                  role: str | None) -> Conversation:
    """The conversation to talk in: N of this project (exit 2 when there is none), else a new one."""
    from strawpot.model.errors import UsageError

    if conversation_id is None:
        conversation = store.create(project, role=role or "", source="chat")
        _say(f"conversation {conversation.id} in {project}" + (f", role {role}" if role else ""))
        return conversation
    conversation = store.get(conversation_id)  # NoSuchConversation: exit 2, one line
    if conversation.project.resolve() != project.resolve():
        raise UsageError(f"conversation {conversation_id} belongs to project {conversation.project}",
                         hint=f"run `strawpot chat --project {conversation.project} --conversation {conversation_id}`")
    if role and role != conversation.role:
        runs_as = f"role {conversation.role}" if conversation.role else "the project's [orchestrator] role"
        raise UsageError(f"conversation {conversation_id} runs as {runs_as}, not {role}",
                         hint="open a new conversation for another role (leave out --conversation)")
    _say(f"conversation {conversation.id} in {project}: {len(store.tasks(conversation.id))} earlier tasks")
    return conversation


def _say(line: str) -> None:
    """Progress, on stderr (the answers alone go to stdout)."""
    from strawpot.model.display import terminal_safe

    click.echo(terminal_safe(line), err=True)


def _interact(runner: ConversationRunner, conversation: Conversation) -> None:
    """Tasks from stdin, one a line, until EOF or `exit`; each answered before the next is read."""
    tty = sys.stdin.isatty()
    if tty:
        _say("one task a line; `exit` or Ctrl-D ends the chat")
    failed = False
    while True:
        if tty:
            sys.stderr.write(PROMPT)
            sys.stderr.flush()
        line = sys.stdin.readline()
        if not line or line.strip() == "exit":
            break
        if not line.strip():
            continue
        from orchestrator.conversations import ConversationError

        try:
            failed = bool(exit_code(_run(runner, conversation, line.strip(), quiet=False))) or failed
        except ConversationError as exc:  # a task too long, or the store became unreadable: say it, go on
            _say(f"error: {exc.message}")
            failed = True
    if failed:
        raise SystemExit(1)


def _run(runner: ConversationRunner, conversation: Conversation, text: str, *, quiet: bool) -> Task:
    """Submit `text`, wait for its run to end, print its answer (unless `quiet`); the task as it ended."""
    submitted = runner.submit(conversation.id, text)
    if submitted.queued:
        _say(f"queued behind {count(submitted.ahead, 'task')} of conversation {conversation.id}")
    else:
        _say(f"run {submitted.run_id} started")
    try:
        done = _wait(runner, submitted)
    except KeyboardInterrupt:
        done = _interrupted(runner, submitted.task)
        _report(done, quiet)
        raise
    _report(done, quiet)
    return done


def _wait(runner: ConversationRunner, submitted: Submitted) -> Task:
    """Wait for the task to end; say when a queued one starts, and each question its agents ask (it waits in the
    run folder for an answer). Ends nobody recorded (a runner that went away) are settled here, and the
    conversation's next task started when none runs."""
    import time

    from orchestrator.conversations import ENDED
    from strawpot.model.layout import Project

    sessions = Project(runner.store.get(submitted.task.conversation_id).project).sessions_dir
    started, told = submitted.run_id, set[str]()
    while True:
        task = runner.store.task(submitted.task.id)
        if task.phase == ENDED:
            return task
        if task.run_id and task.run_id != started:
            started = task.run_id
            _say(f"run {task.run_id} started")
        if task.run_id:
            _tell_questions(sessions / task.run_id, task.run_id, told)
        runner.settle(task.conversation_id)
        time.sleep(POLL)


def _tell_questions(run_dir: Path, run_id: str, told: set[str]) -> None:
    """Say each open question of the run not said yet, with how to answer it."""
    from orchestrator.questions import questions

    for question in questions(run_dir):
        if question.is_open and question.ask_id not in told:
            told.add(question.ask_id)
            default = f" (default: {question.default})" if question.default else ""
            _say(f"run {run_id} asks ({question.ask_id}): {' '.join(question.question.split())}{default}; answer "
                 f"with `strawpot sessions answer {run_id} {question.ask_id} TEXT` or on its run page in strawpot ui")


def _interrupted(runner: ConversationRunner, task: Task) -> Task:
    """Ctrl-C while `task` waited: a session in chat's process group got it too and stops; wait for its end (a
    second Ctrl-C does not). A task queued, or run by another process, is left as it is."""
    import os
    import signal
    import time

    from orchestrator.conversations import ENDED

    now = runner.store.task(task.id)
    if now.phase == ENDED or now.pid is None or not _in_my_group(now.pid):
        where = "queued" if now.run_id is None else f"run {now.run_id}"
        _say(f"left task {now.id} ({where}) in conversation {now.conversation_id}")
        return now
    _say(f"stopping run {now.run_id} (Ctrl-C again leaves it running)")
    deadline, signalled = time.monotonic() + STOP_GRACE, False
    try:
        while (now := runner.store.task(task.id)).phase != ENDED:
            if not signalled and time.monotonic() > deadline and now.pid is not None:
                signalled = True  # the interrupt was not the terminal's: the session never got it
                os.kill(now.pid, signal.SIGINT)
            time.sleep(POLL)
    except KeyboardInterrupt:
        _say(f"left run {now.run_id} running")
    return now


def _in_my_group(pid: int) -> bool:
    import os

    try:
        return os.getpgid(pid) == os.getpgrp()
    except OSError:
        return False


def _report(task: Task, quiet: bool) -> None:
    """The task's answer on stdout as inert text (an agent wrote it), and how its run ended on stderr."""
    from orchestrator.conversations import ENDED
    from strawpot.model.display import terminal_safe

    if task.phase != ENDED:
        return
    if task.summary and not quiet:
        click.echo(terminal_safe(task.summary))
    code = "" if task.exit_code is None else f" (exit code {task.exit_code})"
    why = f": {task.error}" if task.error else ""
    _say(f"run {task.run_id or '-'} {task.state}{code}{why}")


def exit_code(task: Task) -> int:
    """The exit code `strawpot chat --task` ends with: the run's own, 1 for a run that failed without one."""
    if task.state == "succeeded":
        return 0
    return task.exit_code or 1


def _error(task: Task, code: int) -> dict[str, Any]:
    """The `error` object of a failed task's JSON document (docs/json.md), or nothing when it succeeded."""
    from strawpot.failures import ERROR_CODES

    if not code:
        return {}
    message = f"run {task.run_id or '-'} {task.state}" + (f": {task.error}" if task.error else "")
    return {"error": {"code": ERROR_CODES.get(code, "error"), "exit_code": code, "message": message, "hint": None}}


def task_json(task: Task) -> dict[str, Any]:
    return {"id": task.id, "task": task.task, "phase": task.phase, "run_id": task.run_id, "state": task.state,
            "exit_code": task.exit_code, "summary": task.summary, "error": task.error,
            "submitted_at": task.submitted_at, "started_at": task.started_at, "ended_at": task.ended_at}


def _list(store: ConversationStore, project: Path, as_json: bool) -> None:
    """The project's conversations, the newest first, each with its last task and that task's state."""
    from datetime import datetime

    from strawpot.model.display import terminal_safe

    listed = [(c, store.tasks(c.id)) for c in store.recent(project)]
    if as_json:
        print_json({"project": str(project), "conversations": [
            {"id": c.id, "role": c.role, "source": c.source, "created_at": c.created_at, "tasks": len(tasks),
             "last_task": task_json(tasks[-1]) if tasks else None} for c, tasks in listed]})
        return
    if not listed:
        _say(f"no conversations in {project}: `strawpot chat` opens one")
    for c, tasks in listed:
        created = datetime.fromtimestamp(c.created_at).strftime("%Y-%m-%d %H:%M")
        last = tasks[-1] if tasks else None
        what = "no tasks yet" if last is None else f"last: {last.state or last.phase}  {_one_line(last.task)}"
        click.echo(terminal_safe(f"{c.id:>4}  {created}  {c.role or '-'}  {count(len(tasks), 'task')}  {what}"))


def _one_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit] + " …"
