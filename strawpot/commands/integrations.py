"""`strawpot integrations list|start|stop|logs NAME`: the chat integrations `strawpot ui` runs (docs/ui.md)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import rich_click as click

from strawpot.commands._options import json_option, print_json, project_option
from strawpot.model.display import terminal_safe
from strawpot.model.folders import data_dir

SECTION = "sessions"
# seconds `start`/`stop` wait for the running UI's supervisor to act: it looks twice a second, but a stop may take
# SIGTERM's 5 s grace and a loaded machine is slow
_WAIT = 60.0


@click.group()
def command() -> None:
    """The chat integrations (Telegram, Slack, Discord adapters) `strawpot ui` starts and supervises.

    `ui.integrations` in the global config names those it starts; `start`/`stop` NAME overrule it (remembered,
    and acted on by the running UI within a second, or when the next one starts); `logs NAME` prints a log."""


def _trees(project: Path | None) -> list[Path]:
    """The installed trees looked in: this project's, then the global scope's (as `strawpot ui` looks)."""
    from strawpot.model.folders import home_dir
    from strawpot.model.layout import Project

    here = Project.at(project)
    return [*([here.tree_root] if here.exists else []), home_dir()]


def _checked(name: str) -> str:
    from strawpot.model.errors import UsageError
    from strawpot.model.package import slug_error

    if problem := slug_error(name):
        raise UsageError(f"integration name {problem}", hint="see `strawpot integrations list`")
    return name


@command.command("list")
@project_option
@json_option
def list_integrations(project: Path | None, as_json: bool) -> None:
    """Every integration installed here or globally, or enabled: whether `ui.integrations` enables it, what
    `start`/`stop` last said, and, while a UI runs, its state (running: pid, since, restarts; failed: why)."""
    from orchestrator.integration_launch import installed_names
    from orchestrator.integration_state import read_status, wishes
    from orchestrator.ui_lock import running_ui
    from strawpot.config_files import load_settings
    from strawpot.model.folders import home_dir

    data = data_dir()
    installed = installed_names(_trees(project))
    scope = {name: "global" if folder.is_relative_to(home_dir()) else "project" for name, folder in installed.items()}
    enabled = set(load_settings().get("ui.integrations"))
    said = wishes(data)
    ui = running_ui(data)
    status = read_status(data) if ui is not None else {}
    rows = []
    for name in sorted(installed.keys() | enabled | said.keys() | status.keys()):
        found, wish = status.get(name), said.get(name)
        rows.append({
            "name": name, "scope": scope.get(name), "folder": str(installed[name]) if name in installed else None,
            "enabled": name in enabled,
            "said": None if wish is None else "start" if wish.on else "stop",
            "state": found.state if found else ("not running (no strawpot ui)" if ui is None else "stopped"),
            "pid": found.pid if found else None, "since": found.since if found else None,
            "restarts": found.restarts if found else 0, "error": found.error if found else "",
        })
    if as_json:
        print_json({"ui": None if ui is None else {"pid": ui.pid, "origin": ui.origin}, "integrations": rows})
        return
    click.echo(f"strawpot ui: pid {ui.pid} at {ui.origin}" if ui else "strawpot ui: not running", err=True)
    if not rows:
        click.echo("No integrations installed (`strawpot install integration NAME`).", err=True)
    for row in rows:
        click.echo(terminal_safe(_line(row)))


def _line(row: dict[str, object]) -> str:
    wish = {"start": ", started by hand", "stop": ", stopped by hand", None: ""}[row["said"]]  # type: ignore[index]
    about = f"{'enabled' if row['enabled'] else 'not enabled'}{wish}"
    where = f"{row['scope']}: {row['folder']}" if row["folder"] else "not installed here"
    state = str(row["state"])
    if row["pid"]:
        since = datetime.fromtimestamp(float(row["since"] or 0)).isoformat(timespec="seconds")  # type: ignore[arg-type]
        state += f" (pid {row['pid']}, since {since}, {row['restarts']} restarts)"
    lines = [line for line in str(row["error"]).splitlines() if line.strip()]
    if lines:  # why, and what its log said last (the error a crashed adapter printed), each on one line
        state += ": " + lines[0] + (f" {lines[-1].strip()}" if len(lines) > 1 else "")
    return f"{row['name']}  {state}  [{about}]  {where}"


@command.command("start")
@click.argument("name")
@project_option
def start(name: str, project: Path | None) -> None:
    """Start integration NAME under the running `strawpot ui` (a failed one gets another go), and keep it on
    for later UIs; with no UI running, the wish is recorded and takes effect when `strawpot ui` starts."""
    _act(_checked(name), project, on=True)


@command.command("stop")
@click.argument("name")
@project_option
def stop(name: str, project: Path | None) -> None:
    """Stop integration NAME (SIGTERM to its process group, SIGKILL after 5 s) and keep it off for later UIs,
    whatever `ui.integrations` says, until `start`."""
    _act(_checked(name), project, on=False)


def _act(name: str, project: Path | None, *, on: bool) -> None:
    from orchestrator.integration_launch import installed_names
    from orchestrator.integration_state import FAILED, RUNNING, STOPPED, read_status, say
    from orchestrator.ui_lock import running_ui
    from strawpot.model.errors import StrawpotError

    data = data_dir()
    if on and name not in installed_names(_trees(project)) and name not in read_status(data):
        raise StrawpotError(f"integration {name} is not installed here or globally",
                            hint=f"install it: `strawpot install integration {name}` (or `--global`)")
    asked = time.time()
    say(data, name, on=on)
    verb = "start" if on else "stop"
    ui = running_ui(data)
    if ui is None:
        click.echo(f"Recorded: {name} will {verb} when `strawpot ui` runs (none serves {data} now)", err=True)
        return
    deadline = time.monotonic() + _WAIT
    while time.monotonic() < deadline:
        now = read_status(data).get(name)
        if now is not None and (now.state == RUNNING or now.state == FAILED and now.tried >= asked if on
                                else now.state == STOPPED):
            break
        time.sleep(0.2)
    else:
        raise StrawpotError(f"strawpot ui (pid {ui.pid}) did not {verb} {name} within {_WAIT:g} s",
                            hint="see `strawpot integrations list` and the UI's own output")
    if now.state == FAILED:
        exited = now.error.startswith("exited")  # else the line says why it could not start, and what to do
        raise StrawpotError(terminal_safe(f"integration {name} did not start: {now.error.splitlines()[0]}"),
                            hint=f"see `strawpot integrations logs {name}`" if exited else None)
    click.echo(f"Started {name} (pid {now.pid}) under strawpot ui (pid {ui.pid})" if on
               else f"Stopped {name}", err=True)


@command.command("logs")
@click.argument("name")
@click.option("--lines", "-n", type=click.IntRange(min=1), default=40, show_default=True, help="Lines to print.")
@click.option("--follow", "-f", is_flag=True, help="Then print what it writes, until Ctrl-C.")
def logs(name: str, lines: int, follow: bool) -> None:
    """Print the end of integration NAME's log (`{data}/integrations/NAME/adapter.log`: its output, and a line
    from strawpot each time it starts)."""
    from orchestrator.integration_launch import log_path
    from strawpot.model.errors import StrawpotError

    path = log_path(data_dir(), _checked(name))
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - 64 * 1024))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        raise StrawpotError(f"integration {name} has no log at {path} (strawpot ui has not started it)",
                            hint=f"`strawpot integrations start {name}` with `strawpot ui` running") from None
    for line in text.splitlines()[-lines:]:
        click.echo(terminal_safe(line))
    if follow:
        _follow(path, size)


def _follow(path: Path, offset: int) -> None:
    try:
        while True:
            try:
                with open(path, "rb") as fh:
                    if fh.seek(0, 2) < offset:
                        offset = 0  # emptied by the supervisor past its size limit
                    fh.seek(offset)
                    chunk = fh.read()
            except OSError:
                chunk = b""
            offset += len(chunk)
            if chunk:
                click.echo(terminal_safe(chunk.decode("utf-8", errors="replace")), nl=False)
            time.sleep(0.5)
    except KeyboardInterrupt:
        return
