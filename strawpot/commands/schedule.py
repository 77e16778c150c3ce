"""`strawpot schedule add|list|remove|history`: recurring headless sessions kept in the user's data folder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import rich_click as click

from strawpot.commands._options import json_option, print_json

SECTION = "other"


@click.group()
def command() -> None:
    """Recurring headless sessions (cron + role + task), stored in the data folder ($STRAWPOT_DATA_DIR moves it).

    Not yet fired by anything: `schedule run` and `schedule serve` are still to come (docs/schedules.md)."""


@command.command("add")
@click.argument("name")
@click.option("--cron", required=True, help='Cron expression, e.g. "0 9 * * 1-5".')
@click.option("--role", required=True, help="Role the session starts with.")
@click.option("--task", required=True, help="Task text given to the role.")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Project folder the session runs in (default: the nearest folder from the current one upward that "
                   "holds strawpot.toml or strawpot.lock, else the current folder).")
@click.option("--param", "params", multiple=True, metavar="K=V", help="A role parameter; repeatable.")
@click.option("--timezone", default=None, help="IANA zone the cron is read in (default: the local zone).")
@click.option("--overlap", type=click.Choice(["skip", "queue"]), default="skip",
              help="What a fire does while the previous one still runs.")
def add(name: str, cron: str, role: str, task: str, project: Path | None, params: tuple[str, ...],
        timezone: str | None, overlap: str) -> None:
    """Store a schedule; refuses a cron expression that is invalid or never fires."""
    from orchestrator.schedules import Schedule, ScheduleStore, default_data_dir, local_timezone, validate
    from strawpot.model.errors import UsageError

    parsed: dict[str, str] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {item!r} is not K=V", hint="e.g. --param repo=acme/app")
        parsed[key] = value
    schedule = Schedule(name=name, cron=cron, project=(project or _nearest_project()).resolve(), role=role, task=task,
                        params=parsed, timezone=timezone or local_timezone(), overlap=overlap)
    validate(schedule, datetime.now(UTC))
    ScheduleStore(default_data_dir()).add(schedule)
    click.echo(f"Added schedule {name} ({cron}, {schedule.timezone})", err=True)


@command.command("list")
@json_option
def list_schedules(as_json: bool) -> None:
    """Every schedule with its next fire time."""
    from orchestrator.schedules import ScheduleStore, default_data_dir, next_fire

    now = datetime.now(UTC)
    rows = []
    for s in ScheduleStore(default_data_dir()).list():
        upcoming = next_fire(s, now)
        rows.append({"name": s.name, "cron": s.cron, "timezone": s.timezone, "project": str(s.project),
                     "role": s.role, "task": s.task, "params": s.params, "overlap": s.overlap,
                     "next_fire": upcoming.isoformat() if upcoming else None})
    if as_json:
        print_json({"schedules": rows})
        return
    for row in rows:
        click.echo(f"{row['name']}  {row['cron']} ({row['timezone']})  next {row['next_fire'] or 'never'}  "
                   f"{row['role']}: {row['task']}")


@command.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Delete a schedule (its history stays)."""
    from orchestrator.schedules import ScheduleStore, default_data_dir

    ScheduleStore(default_data_dir()).remove(name)
    click.echo(f"Removed schedule {name}", err=True)


@command.command("history")
@click.argument("name")
@json_option
def history(name: str, as_json: bool) -> None:
    """Every recorded fire of a schedule: when, its run id, and what came of it."""
    from orchestrator.schedules import ScheduleStore, default_data_dir

    runs = ScheduleStore(default_data_dir()).history(name)
    if as_json:
        print_json({"schedule": name, "runs": [
            {"run_id": r.run_id, "fired_at": r.fired_at.isoformat(), "outcome": r.outcome} for r in runs]})
        return
    for r in runs:
        click.echo(f"{r.fired_at.isoformat()}  {r.run_id or '-'}  {r.outcome}")


def _nearest_project() -> Path:
    """The project `strawpot start` would find from here (the one discovery rule), else the current folder."""
    from strawpot.model.layout import find_project_dir

    return find_project_dir(Path.cwd()) or Path.cwd()
