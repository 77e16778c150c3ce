"""An expected failure as one `error:` line and a hint (a JSON error with --json), and its documented exit code."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is not imported on the early answer's path
if TYPE_CHECKING:
    from collections.abc import Callable

# The `error.code` of a failure's JSON document, by exit code (docs/json.md).
ERROR_CODES = {1: "error", 2: "usage", 3: "conflict", 4: "lock_outdated", 5: "integrity", 6: "registry_unreachable",
               7: "missing_requirement", 130: "interrupted"}


def expected(exc: BaseException, args: list[str], command: Callable[[], str]) -> int | None:
    """Say what failed for one of the failures a command may end in (ours, Ctrl-C, a closed pipe, a file system that
    refused) and return its exit code; None for any other exception (a bug: its traceback shows). `command` gives
    the command's path for a JSON error."""
    from strawpot.model.errors import StrawpotError

    json_for = command if "--json" in args else None
    if isinstance(exc, StrawpotError):
        print_error(exc.message, exc.hint, json_for=json_for, code=exc.exit_code)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        print_error("interrupted", None, json_for=json_for, code=130)
        return 130
    if isinstance(exc, BrokenPipeError):
        return 1
    if isinstance(exc, OSError):
        # The file system refused (read-only, permissions, disk full, a file where a folder must be): name the
        # path and the reason in one line; whatever was being replaced is left as it was (writes are atomic).
        where = f": {exc.filename}" if exc.filename else ""
        print_error(f"{exc.strerror or exc}{where}", "check the permissions and free space of that path",
                    json_for=json_for, code=1)
        return 1
    return None


def print_error(message: str, hint: str | None, *, json_for: Callable[[], str] | None = None, code: int = 1) -> None:
    """The `error:` line (and `hint:`) on stderr, even under --quiet; with `json_for` (the command's path), first the
    JSON error document on stdout."""
    if json_for is not None:
        print_json_error(json_for(), code, message, hint)
    from strawpot.console import err_console

    err_console.quiet = False  # --quiet hides progress, never the error
    if err_console.plain:  # a pipe or a file: the words rich would print, without rich
        err_console.line(f"error: {message}")
        if hint:
            err_console.line(f"hint: {hint}")
        return
    from rich.markup import escape

    # Messages carry file names and server text verbatim: '[skills]' must not be read as markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, highlight=False, soft_wrap=True)
    if hint:
        err_console.print(f"[dim]hint:[/] {escape(hint)}", markup=True, highlight=False, soft_wrap=True)


def print_json_error(command: str, code: int, message: str, hint: str | None) -> None:
    """A failed `--json` command still prints one JSON document on stdout: the `error` object."""
    import json

    from strawpot.commands._json_report import json_document

    error = {"code": ERROR_CODES.get(code, "error"), "exit_code": code, "message": message, "hint": hint}
    sys.stdout.write(json.dumps(json_document({"error": error}, command=command), indent=2) + "\n")
    sys.stdout.flush()
