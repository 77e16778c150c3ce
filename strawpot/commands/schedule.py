"""`strawpot schedule add|list|remove|history|run|serve`: recurring headless sessions kept in the user's data folder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import rich_click as click

from strawpot.commands._complete import complete_role
from strawpot.commands._options import json_option, print_json
from strawpot.model.display import terminal_safe
from strawpot.model.folders import data_dir

SECTION = "sessions"


@click.group()
def command() -> None:
    """Recurring headless sessions (cron + role + task), stored in the data folder ($STRAWPOT_DATA_DIR moves it).

    `schedule serve` (or `strawpot ui` while it runs) fires them; `schedule run NAME` fires one now
    (docs/schedules.md)."""


@command.command("add")
@click.argument("name")
@click.option("--cron", required=True, help='Cron expression, e.g. "0 9 * * 1-5".')
@click.option("--role", required=True, shell_complete=complete_role, help="Role the session starts with.")
@click.option("--task", required=True, help="Task text given to the role.")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Project folder the session runs in (default: the nearest folder from the current one upward that "
                   "holds strawpot.toml or strawpot.lock, else the current folder).")
@click.option("--param", "params", multiple=True, metavar="K=V",
              help="A param of the agent that plays the role (as `start --param`: one its AGENT.md declares, "
                   "`strawpot info agent NAME` lists them); repeatable.")
@click.option("--timezone", default=None, help="IANA zone the cron is read in (default: the local zone).")
@click.option("--overlap", type=click.Choice(["skip", "queue", "parallel"]), default="skip",
              help="What a fire does while the previous one still runs: skip it, start it when that one ends, "
                   "or start it anyway.")
@click.option("--notify", default="", metavar="INTEGRATION[:CHAT_ID]",
              help="When a fire ends, tell this integration's chat (the chat CHAT_ID, else its default one) the "
                   "run's state and summary, in one line.")
@click.option("--runner", type=click.Choice(["local", "ray"]), default=None,
              help="Where its sessions run: here, or on a Ray cluster's workers (as `start --runner`; default: the "
                   "project's [session].runner; docs/deploy.md).")
def add(name: str, cron: str, role: str, task: str, project: Path | None, params: tuple[str, ...],
        timezone: str | None, overlap: str, notify: str, runner: str | None) -> None:
    """Store a schedule; refuses a cron expression that is invalid or never fires."""
    from orchestrator.scheduler import precheck
    from orchestrator.schedules import Schedule, ScheduleStore, add_schedule
    from strawpot.model.errors import UsageError

    parsed: dict[str, str] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r} is not K=V", hint="e.g. --param repo=acme/app")
        parsed[key] = value
    schedule = add_schedule(ScheduleStore(data_dir()), Schedule(
        name=name, cron=cron, project=project or _nearest_project(), role=role, task=task, params=parsed,
        timezone=timezone or "", overlap=overlap, notify=notify, runner=runner or ""), datetime.now(UTC))
    click.echo(f"Added schedule {name} ({cron}, {schedule.timezone})", err=True)
    if problem := precheck(schedule):  # stored all the same: the folder may be cloned or locked later
        click.echo(f"warning: schedule {name} cannot fire yet: {problem}", err=True)


@command.command("list")
@json_option
def list_schedules(as_json: bool) -> None:
    """Every schedule with its next fire time, or why it does not fire (a name or cron edited by hand).

    An entry of schedules.json that cannot be read is listed with what is wrong and how to fix or remove it;
    the others are listed all the same, and the command exits 0."""
    from orchestrator.schedules import (
        ScheduleError,
        ScheduleStore,
        check_name,
        next_fire,
        shown_name,
    )

    now = datetime.now(UTC)
    store = ScheduleStore(data_dir())
    good, broken = store.read()
    rows = []
    for s in good:
        try:
            check_name(s.name)
            upcoming, problem = next_fire(s, now), None
        except ScheduleError as exc:  # this one does not fire; the others are listed all the same
            upcoming, problem = None, str(exc)
        rows.append({"name": s.name, "cron": s.cron, "timezone": s.timezone, "project": str(s.project),
                     "role": s.role, "task": s.task, "params": s.params, "overlap": s.overlap, "notify": s.notify or None,
                     "runner": s.runner or None,
                     "next_fire": upcoming.isoformat() if upcoming else None, "problem": problem})
    unreadable = [{"position": b.position, "name": b.name, "problem": b.problem, "fix": b.fix(store.file),
                   "message": b.describe(store.file)} for b in broken]
    if as_json:
        print_json({"schedules": rows, "unreadable": unreadable})
        return
    names = [shown_name(str(row["name"])) for row in rows] + [
        shown_name(b.name) if b.name is not None else f"(entry {b.position})" for b in broken]
    width = max(map(len, names), default=0)
    for shown, row in zip(names, rows, strict=False):
        when = f"does not fire: {row['problem']}" if row["problem"] else f"next {row['next_fire'] or 'never'}"
        runner = f"runner {row['runner']}  " if row["runner"] else ""  # none: the project's [session] runner
        click.echo(_one_line(f"{shown:<{width}}  {row['cron']} ({row['timezone']})  {when}  in {row['project']}  "
                             f"{runner}{row['role']}: {row['task']}"))
    for shown, b in zip(names[len(rows):], unreadable, strict=True):
        click.echo(_one_line(f"{shown:<{width}}  {b['message']}"))


def _one_line(text: str) -> str:
    """A stored schedule's text (anyone's: the file may be hostile) as one inert terminal line."""
    return terminal_safe(text.replace("\r", "\\r").replace("\n", "\\n"))


@command.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Delete a schedule (its history stays)."""
    from orchestrator.schedules import ScheduleStore

    ScheduleStore(data_dir()).remove(name)
    click.echo(f"Removed schedule {name}", err=True)


@command.command("history")
@click.argument("name")
@json_option
def history(name: str, as_json: bool) -> None:
    """Every recorded fire of a schedule: when, its run id, and what came of it (with the one-line error)."""
    from orchestrator.scheduler import settle
    from orchestrator.schedules import ScheduleStore
    from strawpot.model.errors import UsageError

    store = ScheduleStore(data_dir())
    runs = settle(store, name, datetime.now(UTC))
    known = store.get(name) is not None or bool(store.unreadable(name))
    if not runs and not known:  # a removed schedule's history stays readable; a name never used is a typo
        raise UsageError(f"no schedule named {name!r}, and no history of one", hint="see `strawpot schedule list`")
    if as_json:
        print_json({"schedule": name, "runs": [
            {"run_id": r.run_id, "fired_at": r.fired_at.isoformat(), "outcome": r.outcome,
             "scheduled_for": r.scheduled_for.isoformat() if r.scheduled_for else None,
             "ended_at": r.ended_at.isoformat() if r.ended_at else None, "exit_code": r.exit_code,
             "error": r.error} for r in runs]})
        return
    if not runs:
        click.echo(f"schedule {name} has not fired yet (`strawpot schedule run {name}` fires it now)", err=True)
    for r in runs:
        code = "" if r.exit_code is None else f" (exit code {r.exit_code})"
        why = f": {terminal_safe(r.error)}" if r.error else ""
        click.echo(f"{r.fired_at.isoformat()}  {r.run_id or '-'}  {r.outcome}{code}{why}")


@command.command("run")
@click.argument("name")
def run(name: str) -> None:
    """Fire a schedule now and wait for its session; prints its run id and end state, exits with its exit code.

    Starts a session whatever --overlap says (you asked for this one). Exits 2 when the schedule is unknown or
    its project folder or strawpot.lock is gone, and with `strawpot start`'s code when that refuses (5: the
    installed tree differs from the lock); either way the history records the failure.
    """
    from orchestrator.scheduler import Scheduler, session_of
    from orchestrator.schedules import ScheduleStore
    from orchestrator.session import State
    from strawpot.model.errors import StrawpotError, UsageError

    store = ScheduleStore(data_dir())
    schedule = store.get(name)
    if schedule is None and (why := store.unreadable(name)):
        raise UsageError(why)
    if schedule is None:
        raise UsageError(f"no schedule named {name!r}", hint="see `strawpot schedule list`")
    # In this process's group: Ctrl-C here stops the session too, as it would stop `strawpot start`.
    ended = Scheduler(store, detach=False, say=lambda line: None).fire(schedule, stdout=None)
    if ended.run_id is None:  # refused before `strawpot start`: the project folder or its lock is gone
        raise UsageError(f"schedule {name}: {ended.error}")
    if session_of(schedule, ended) is None:  # `strawpot start` refused (exit 5: a tampered tree)
        error = StrawpotError(f"schedule {name}: {ended.error}", hint=f"its history: `strawpot schedule history {name}`")
        error.exit_code = ended.exit_code or 1
        raise error
    why = f": {terminal_safe(ended.error)}" if ended.error else ""
    click.echo(f"run {ended.run_id} {ended.outcome} (exit code {ended.exit_code}){why}", err=True)
    code = ended.exit_code or (1 if ended.outcome != State.SUCCEEDED else 0)
    if code:
        raise SystemExit(code)


@command.command("serve")
def serve() -> None:
    """Fire every schedule at its time, until Ctrl-C or SIGTERM (`strawpot ui` does the same while it runs).

    Holds scheduler.lock in the data folder: a second scheduler exits 1 naming the pid that holds it. Fires
    missed while nothing served follow the `schedule.catch_up` setting (docs/schedules.md). Says when each
    schedule fires next (in its zone and in local time) on start, and again after each fire.
    """
    import contextlib
    import errno

    from orchestrator.interrupts import sigterm_as_interrupt
    from orchestrator.scheduler import Scheduler
    from orchestrator.scheduler_lock import SchedulerLock, held_message
    from orchestrator.schedules import ScheduleError, ScheduleStore, check_name, next_fire_line
    from strawpot.config_files import load_settings
    from strawpot.model.errors import StrawpotError
    from strawpot.model.plural import count

    store = ScheduleStore(data_dir())
    settings = load_settings()
    catch_up, max_parallel = str(settings.get("schedule.catch_up")), int(settings.get("runner.max_parallel"))
    lock = SchedulerLock(store.data_dir)
    try:
        holder = lock.acquire()
    except OSError as exc:  # a link or a FIFO planted as the lock file; a data folder that cannot be written
        planted = exc.errno in (errno.ELOOP, errno.EINVAL)
        raise StrawpotError(f"cannot lock {lock.path}: {exc.strerror or exc}",
                            hint="remove it (no scheduler runs while it is there)" if planted else None) from None
    if holder is not None:
        raise StrawpotError(f"{held_message(holder, store.data_dir)}: stop it first")
    scheduler = Scheduler(store, catch_up=catch_up, announce=True, max_parallel=max_parallel)
    schedules = store.list()
    click.echo(f"serving {count(len(schedules), 'schedule')} from {store.data_dir} (catch_up = {catch_up}, "
               f"max_parallel = {max_parallel}); "
               "Ctrl-C stops", err=True)
    now = datetime.now(UTC)
    for schedule in schedules:
        with contextlib.suppress(ScheduleError):  # one that does not fire: the scheduler says why, once
            check_name(schedule.name)
            click.echo(terminal_safe(next_fire_line(schedule, now)), err=True)
    try:
        with sigterm_as_interrupt():
            scheduler.serve()
    except KeyboardInterrupt:
        scheduler.stop()
        busy = scheduler.busy()
        left = f"; still running, and recorded by the next scheduler: {', '.join(busy)}" if busy else ""
        click.echo(f"stopped serving schedules{left}", err=True)
    finally:
        lock.release()


def _nearest_project() -> Path:
    """The project `strawpot start` would find from here (the one discovery rule), else the current folder."""
    from strawpot.model.layout import find_project_dir

    return find_project_dir(Path.cwd()) or Path.cwd()
