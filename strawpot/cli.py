"""The `strawpot` entry point: `--version`, `--help` to a pipe and a bare `install` with nothing to do answer before
click and rich are imported."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself is not imported: its import alone costs more than `--version` does
if TYPE_CHECKING:
    from collections.abc import Iterator

# What `[global flags] install [install flags]` may carry and still get the early answer: each option as click
# spells it, with the name of the click parameter it sets. tests/install/test_early_answer.py derives these tables
# from the click commands, so an option added there and not here fails it. `_CLICK_ONLY` always goes through
# click: help, or a run asking for more than "nothing to do" (JSON, a dry run...); click reports every mistake.
_GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}
_GLOBAL_VALUES = {"--color": "color"}
_INSTALL_FLAGS = {"--frozen": "frozen", "--locked": "locked", "--skip-tools": "skip_tools", "--offline": "offline",
                  "-y": "yes", "--yes": "yes", "-g": "is_global", "--global": "is_global"}
_INSTALL_VALUES = {"--project": "project", "-p": "project", "--registry": "registry"}
_CLICK_ONLY = frozenset({"-h", "--help", "--version", "--json", "--dry-run", "--no-save", "--ignore-scripts",
                         "--install-tools", "--trust-project"})
_CLICK_ONLY_ENV = frozenset({"STRAWPOT_TRUST_PROJECT"})  # set, click reads it as --trust-project
_COLORS = ("auto", "always", "never")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure prints one `error:` line (and a hint) and exits with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # what click's version option prints; tests/commands/test_command_table.py holds them equal
        from strawpot import __version__

        sys.stdout.write(f"strawpot, version {__version__}\n")
        return 0
    if args in (["--help"], ["-h"]):
        from strawpot.commands import _help

        if _help.wanted(args):  # plain text to a pipe, from the command table; on a terminal rich-click draws it
            sys.stdout.write(_help.plain_help())
            return 0
    try:
        if _noop_install(args):
            return 0
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    if argv is None:  # this process is the `strawpot` program: the children it starts must not read its secrets
        from strawpot.model import own_secrets

        own_secrets.hold()
    from strawpot.cli_group import run

    code = run(argv)  # None when from sys.argv: click then expands wildcards where the shell does not (Windows)
    if argv is None:
        # This process is the `strawpot` program and ends now. The interpreter's final garbage collection of
        # everything a command built (~30k objects after an install) took 25-45 ms; the OS frees it at once.
        # atexit handlers, finalizers and the flushing of open files still run.
        import gc

        gc.freeze()
    return code


def _noop_install(args: list[str]) -> bool:
    """True (after saying so on stderr, unless quiet) when `args` are a bare install and the first step of the
    install pipeline (`strawpot.install.fastcheck.nothing_to_do`) finds nothing to do."""
    found = _bare_install(args)
    if found is None:
        return False
    import time
    from pathlib import Path

    from strawpot.install.fastcheck import nothing_to_do
    from strawpot.model.layout import Project
    from strawpot.model.plural import count

    started = time.perf_counter()
    project = found.get("project")
    try:
        where = Project.at(project if isinstance(project, Path) else None, is_global="is_global" in found)
        current = nothing_to_do(where, **current_question(found))
    except OSError:  # the working folder vanished, a folder cannot be read: the full path says so properly
        return False
    if current is None:
        return False
    if "quiet" not in found:
        sys.stderr.write(f"Already up to date ({count(current, 'package')}) in {time.perf_counter() - started:.2f}s\n")
    return True


def current_question(found: dict[str, object]) -> dict[str, bool]:
    """`Options.current_question()` of the options click would build from these parameters (a test holds the
    two equal; importing the options module here would add ~3 ms to a ~65 ms no-op)."""
    return {"frozen": "frozen" in found, "lock_only": False, "check_tools": "skip_tools" not in found}


def _bare_install(args: list[str]) -> dict[str, object] | None:
    """The click parameters `[global flags] install [install flags]` set (flags as True), or None if `args` are
    anything else, or both --frozen and --locked (click refuses the pair)."""
    if any(os.environ.get(name) for name in _CLICK_ONLY_ENV):
        return None
    seen: dict[str, object] = {}
    rest = iter(args)
    if not _global_flags(rest, seen) or not _install_flags(rest, seen):
        return None
    return None if "frozen" in seen and "locked" in seen else seen


def _global_flags(rest: Iterator[str], seen: dict[str, object]) -> bool:
    """Read the flags before `install` (and `install` itself) into `seen`; False on anything else."""
    for arg in rest:
        if arg == "install":
            return True
        if arg in _GLOBAL_FLAGS:
            seen[_GLOBAL_FLAGS[arg]] = True
            continue
        option, equals, value = arg.partition("=")
        if option not in _GLOBAL_VALUES:
            return False
        given = value if equals else next(rest, None)
        if given not in _COLORS:
            return False
        seen[_GLOBAL_VALUES[option]] = given
    return False


def _install_flags(rest: Iterator[str], seen: dict[str, object]) -> bool:
    """Read the flags after `install` into `seen`; False on anything else."""
    for arg in rest:
        if arg in _INSTALL_FLAGS:
            seen[_INSTALL_FLAGS[arg]] = True
            continue
        option, equals, value = arg.partition("=")
        if option not in _INSTALL_VALUES or (equals and option == "-p"):
            return False
        given = value if equals else next(rest, None)
        if given is None or given.startswith("-"):
            return False
        if _INSTALL_VALUES[option] == "project":
            if not (os.path.isdir(given) and os.access(given, os.R_OK)):
                return False  # click names the missing or unreadable folder
            from pathlib import Path

            seen["project"] = Path(given)
        else:
            seen[_INSTALL_VALUES[option]] = given
    return True


if __name__ == "__main__":
    sys.exit(main())
