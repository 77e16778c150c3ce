"""The `strawpot` entry point: a bare `install` with nothing to do answers before click and rich are imported."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

# The flags a bare `strawpot install` may carry and still take the no-op path; anything else (help, --json,
# --dry-run, packages, a flag spelt another way) goes through click, which also reports every mistake.
_GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": None, "--verbose": None}
_INSTALL_FLAGS = {"--frozen": "frozen", "--locked": "locked", "--skip-tools": "skip_tools", "--offline": None,
                  "-y": None, "--yes": None, "-g": "is_global", "--global": "is_global"}
_COLORS = ("auto", "always", "never")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure prints one `error:` line (and a hint) and exits with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if _noop_install(args):
            return 0
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
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
    """True when `args` are a bare install (with only the flags above) and the tree already equals the lock."""
    found = _bare_install(args)
    if found is None:
        return False
    from strawpot.install.fastcheck import noop_install

    try:
        project = found["project"]
        return noop_install(project if isinstance(project, Path) else None, bool(found["is_global"]), frozen=bool(found["frozen"]),
                            skip_tools=bool(found["skip_tools"]), quiet=bool(found["quiet"]))
    except Exception:  # noqa: BLE001 - whatever the quick look trips on, the full path reports properly
        return False


def _bare_install(args: list[str]) -> dict[str, object] | None:
    """The options of `[global flags] install [install flags]`, or None if `args` are anything else."""
    seen: dict[str, object] = {"quiet": False, "is_global": False, "frozen": False, "locked": False,
                               "skip_tools": False, "project": None}
    rest = iter(args)
    if not _global_flags(rest, seen) or not _install_flags(rest, seen):
        return None
    if seen["frozen"] and seen["locked"]:
        return None  # click refuses the pair
    return seen


def _global_flags(rest: Iterator[str], seen: dict[str, object]) -> bool:
    """Read the flags before `install` (and `install` itself) into `seen`; False on anything else."""
    for arg in rest:
        if arg == "install":
            return True
        if arg in _GLOBAL_FLAGS:
            name = _GLOBAL_FLAGS[arg]
            if name is not None:
                seen[name] = True
        elif arg == "--color" or arg.startswith("--color="):
            if (arg.partition("=")[2] if "=" in arg else next(rest, None)) not in _COLORS:
                return False
        else:
            return False
    return False


def _install_flags(rest: Iterator[str], seen: dict[str, object]) -> bool:
    """Read the flags after `install` into `seen`; False on anything else."""
    for arg in rest:
        if arg in _INSTALL_FLAGS:
            name = _INSTALL_FLAGS[arg]
            if name is not None:
                seen[name] = True
            continue
        option, equals, value = arg.partition("=")
        if option not in ("--project", "-p", "--registry") or (equals and option == "-p"):
            return False
        given = value if equals else next(rest, None)
        if given is None or given.startswith("-"):
            return False
        if option != "--registry":
            if not (os.path.isdir(given) and os.access(given, os.R_OK)):
                return False  # click names the missing or unreadable folder
            seen["project"] = Path(given)
    return True

if __name__ == "__main__":
    sys.exit(main())
