"""Shell completion of the words commands take: package kinds, installed role names and run ids.

Each reads folder names only (no package file is parsed, no session.json read: a run is a folder holding one),
so a completion answers at once, and a folder that cannot be read completes nothing rather than failing the
shell's completion.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.shell_completion import CompletionItem

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _quiet(find: Callable[[click.Context, str], list[str]]) -> Completer:
    """`find` as a click completer: what it finds starting with the word typed; nothing when a folder fails it."""
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            return [CompletionItem(word) for word in find(ctx, incomplete) if word.startswith(incomplete)]
        except (OSError, ValueError):  # a folder gone, unreadable, or not a folder
            return []

    return complete


def _project(ctx: click.Context) -> Any:
    """The project the command would work on (its --project / --global typed so far, else found from here)."""
    from strawpot.model.layout import Project

    project = ctx.params.get("project")
    return Project.at(project if isinstance(project, Path) else None, is_global=bool(ctx.params.get("is_global")))


def _folders(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith(".") and entry.is_dir())


def _kinds(ctx: click.Context, incomplete: str) -> list[str]:
    from strawpot.model.kinds import Kind

    return [kind.value for kind in Kind]


def _pair_kinds(ctx: click.Context, incomplete: str) -> list[str]:
    """KIND SLUG pairs (`install skill a role b`): a kind where a pair starts, else nothing to offer."""
    typed = ctx.params.get("packages") or ()
    return _kinds(ctx, incomplete) if len(typed) % 2 == 0 else []


def _roles(ctx: click.Context, incomplete: str) -> list[str]:
    from strawpot.model.kinds import Kind

    folder = _project(ctx).tree_root / Kind.ROLE.plural
    return _folders(folder) if folder.is_dir() else []


def _run_ids(ctx: click.Context, incomplete: str) -> list[str]:
    """The project's run ids, newest first (a run id starts with its UTC start time)."""
    from orchestrator.session import RUN_ID_RE, SESSION_FILE

    folder = _project(ctx).sessions_dir
    runs = [name for name in _folders(folder)
            if RUN_ID_RE.fullmatch(name) and (folder / name / SESSION_FILE).is_file()] if folder.is_dir() else []
    return sorted(runs, reverse=True)


complete_kind = _quiet(_kinds)
complete_pair_kind = _quiet(_pair_kinds)
complete_role = _quiet(_roles)
complete_run_id = _quiet(_run_ids)
