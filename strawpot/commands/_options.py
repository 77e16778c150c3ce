"""Options shared by several commands, defined once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import rich_click as click

from strawpot.commands._json_report import JSON_FORMAT_VERSION as JSON_FORMAT_VERSION
from strawpot.commands._json_report import json_document as json_document
from strawpot.commands._json_report import print_json as print_json

if TYPE_CHECKING:
    from strawpot.model.kinds import Kind
    from strawpot.model.layout import Project

F = TypeVar("F", bound=Callable[..., Any])



def project_option(func: F) -> F:
    return click.option(
        "--project", "-p", "project", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
        help="Project folder; it must exist (default: the nearest folder from the current one upward that holds "
             "strawpot.toml or strawpot.lock, else the current folder).",
    )(func)


def global_option(func: F) -> F:
    return click.option(
        "--global", "-g", "is_global", is_flag=True,
        help="Use the global tree ($STRAWPOT_HOME or ~/.strawpot) instead of the project.",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print a versioned JSON report on stdout.")(func)


def registry_option(func: F) -> F:
    return click.option(
        "--registry", "registry", metavar="URL", default=None,
        help="Registry URL (default: $STRAWPOT_REGISTRY_URL, [registry].url, or the public StrawHub).",
    )(func)


def project_options(func: F) -> F:
    """--global, --project and --json: what every command on a project's locked tree takes."""
    return global_option(project_option(json_option(func)))


def registry_project_options(func: F) -> F:
    """--global, --project, --registry and --json: what every command that also asks the registry takes."""
    return global_option(project_option(registry_option(json_option(func))))


def lock_mode_options(func: F) -> F:
    """--locked, --frozen, --offline, --dry-run and --skip-tools: how `install` and `sync` treat the lock.

    --locked and --frozen reach the command as one value, `lock` (a `LockMode`); both at once is exit 2.
    """
    import functools

    command = func

    @functools.wraps(command)
    def with_lock_mode(*args: Any, locked: bool, frozen: bool, **kwargs: Any) -> Any:
        from strawpot.install.options import LockMode

        return command(*args, lock=LockMode.from_flags(locked=locked, frozen=frozen), **kwargs)

    func = with_lock_mode  # type: ignore[assignment]
    options = [
        click.option("--locked", is_flag=True, help="Fail (exit 4) instead of changing strawpot.lock."),
        click.option("--frozen", is_flag=True, help="Install strawpot.lock as it is, without reading strawpot.toml."),
        click.option("--offline", is_flag=True, help="Touch no network: metadata and archives from the cache only."),
        click.option("--dry-run", is_flag=True, help="Show what would change; write nothing."),
        click.option("--skip-tools", is_flag=True, help="Do not check the system tools agents need."),
    ]
    for option in reversed(options):  # decorators apply bottom-up; keep the listed order in --help
        func = option(func)
    return func


def ignore_scripts_option(func: F) -> F:
    return click.option(
        "--ignore-scripts", is_flag=True,
        help="Run no install scripts, not even trusted ones (packages are placed as published).",
    )(func)


def trust_project_option(func: F) -> F:
    return click.option(
        "--trust-project", is_flag=True, envvar="STRAWPOT_TRUST_PROJECT",
        help="Honour strawpot.toml's [scripts] trusted and the lock's pinned scripts without confirming them on "
             "this machine first (for CI; also STRAWPOT_TRUST_PROJECT=1).",
    )(func)


def parse_user_id(text: str) -> tuple[Kind, str]:
    """`agent:my-agent` as typed on a command line (a kind's plural works too); UsageError for anything else."""
    from strawpot.model.errors import UsageError
    from strawpot.model.kinds import Kind
    from strawpot.model.package import slug_error

    kind_text, sep, slug = text.partition(":")
    try:
        kind = Kind.parse(kind_text)
    except ValueError:
        kind = None
    if not sep or kind is None or slug_error(slug):
        raise UsageError(f"{text!r} is not KIND:SLUG", hint="e.g. `agent:my-agent` or `skill:denden`")
    return kind, slug


def existing_project(folder: Path | None, *, is_global: bool = False) -> Project:
    """The project a command on a project's state names (`--global`, `--project DIR`, else found from here);
    outside one, a UsageError (exit 2) naming where it looked, before anything is written."""
    from strawpot.model.errors import UsageError
    from strawpot.model.layout import Project

    found = Project.at(folder, is_global=is_global)
    if is_global or found.exists:
        return found
    where = found.dir if folder is not None else f"{found.dir} or any folder above it"
    raise UsageError(f"no strawpot.toml or strawpot.lock in {where}, so there is no project here",
                     hint="create one with `strawpot init` (or name the project's folder with --project DIR)")
