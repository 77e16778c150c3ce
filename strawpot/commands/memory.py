"""`strawpot memory remember|recall|forget|list`: the project's memory, as agents reach it through Denden."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import rich_click as click

from strawpot.commands._complete import complete_role
from strawpot.commands._options import existing_project, json_option, print_json, project_option

if TYPE_CHECKING:
    from orchestrator.memory import MemoryEntry, MemoryProvider

SECTION = "sessions"
T = TypeVar("T")


def project_memory(project: Path | None) -> MemoryProvider:
    from orchestrator.memory import MemoryFailure
    from orchestrator.memory_providers import open_memory
    from strawpot.config_files import load_settings
    from strawpot.model.errors import StrawpotError

    the_project = existing_project(project)
    try:
        return open_memory(load_settings(the_project).get("memory.provider"), the_project)
    except MemoryFailure as exc:
        raise StrawpotError(str(exc)) from None


def _call(action: Callable[[MemoryProvider], T], project: Path | None) -> T:
    """Run `action` on the project's provider; its failure (a corrupt or locked database) is one line, exit 1."""
    from orchestrator.memory import MemoryFailure
    from strawpot.model.errors import StrawpotError

    try:
        return action(project_memory(project))
    except MemoryFailure as exc:
        raise StrawpotError(str(exc)) from None


def _show(entries: list[MemoryEntry], as_json: bool) -> None:
    if as_json:
        print_json({"entries": [{"id": e.entry_id, "content": e.content, "keywords": list(e.keywords),
                                 "scope": e.scope, "role": e.role, "created_at": e.created_at} for e in entries]})
        return
    from strawpot.model.display import terminal_safe

    if not entries:
        click.echo("nothing remembered matches", err=True)
    for e in entries:  # what was remembered is anyone's text (an agent's): no escape sequence reaches the terminal
        keys = f"  [{', '.join(e.keywords)}]" if e.keywords else ""
        role = f":{e.role}" if e.role else ""
        click.echo(terminal_safe(f"{e.entry_id}  {e.scope}{role}  {e.content}{keys}"))


@click.group()
def command() -> None:
    """The project's memory: what agents remember and recall through Denden, and what their prompts are given."""


@command.command()
@click.argument("text")
@click.option("--keyword", "keywords", multiple=True, metavar="K", help="A keyword to find it by (repeatable).")
@click.option("--scope", type=click.Choice(["project", "global", "role"]), default="project",
              help="project: every role of this project; global: every project; role: only --role.")
@click.option("--role", default="", metavar="ROLE", shell_complete=complete_role, help="The role a `--scope role` entry belongs to.")
@project_option
@json_option
def remember(text: str, keywords: tuple[str, ...], scope: str, role: str, project: Path | None, as_json: bool) -> None:
    """Remember TEXT; prints its id."""
    from orchestrator.memory import EntryTooLarge, check_entry
    from strawpot.model.errors import UsageError

    if scope == "role" and not role:
        raise UsageError("--scope role needs --role ROLE")
    try:
        check_entry(text)
    except EntryTooLarge as exc:
        raise UsageError(str(exc)) from None
    entry_id = _call(lambda p: p.remember(text, list(keywords), scope, role), project)
    if as_json:
        print_json({"id": entry_id})
    else:
        click.echo(entry_id)


@command.command()
@click.argument("query")
@click.option("--max", "max_results", type=int, default=10, show_default=True, help="At most this many entries.")
@click.option("--scope", default="", help="Only this scope.")
@project_option
@json_option
def recall(query: str, max_results: int, scope: str, project: Path | None, as_json: bool) -> None:
    """The entries that match any word of QUERY, best first."""
    _show(_call(lambda p: p.recall(query, [], scope, max_results), project), as_json)


@command.command()
@click.argument("entry_id", metavar="ID")
@project_option
def forget(entry_id: str, project: Path | None) -> None:
    """Forget the entry ID (exit 2 when there is none)."""
    from strawpot.model.errors import UsageError

    if not _call(lambda p: p.forget(entry_id), project):
        raise UsageError(f"no memory entry {entry_id!r}", hint="`strawpot memory list` shows the ids")
    click.echo(f"forgot {entry_id}", err=True)


@command.command(name="list")
@project_option
@json_option
def list_(project: Path | None, as_json: bool) -> None:
    """Every entry, newest first."""
    _show(_call(lambda p: p.entries(), project), as_json)
