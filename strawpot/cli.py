"""The `strawpot` entry point: --version, --help to a pipe and the early answer run before click is imported."""

from __future__ import annotations

import sys


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
    from strawpot.commands._early import answer

    code = answer(args, program=argv is None)  # an install, a read-only command: no click, rich or typing
    if code is None:
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


if __name__ == "__main__":
    sys.exit(main())
