"""The one shape of every `--json` report (docs/json.md), written without click when a command runs without it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the early answer's path
if TYPE_CHECKING:
    from typing import Any

JSON_FORMAT_VERSION = 2  # docs/json.md: snake_case keys, times in seconds, schema_version and command in each


def print_json(payload: dict[str, Any], command: str | None = None) -> None:
    """Print a JSON report on stdout in the one shape every `--json` has (docs/json.md)."""
    import json
    import sys

    sys.stdout.write(json.dumps(json_document(payload, command), indent=2, sort_keys=False) + "\n")


def json_document(payload: dict[str, Any], command: str | None = None) -> dict[str, Any]:
    """`schema_version`, `command` (the running command's path, e.g. "registry token create"), then the payload as
    the command built it: snake_case keys and times in seconds (a registry answer converted where it was read)."""
    if command is None:  # the command runs under click (the early answer names its command)
        import click

        ctx = click.get_current_context(silent=True)
        command = ctx.command_path.partition(" ")[2] if ctx is not None else str(payload.get("command", ""))
    body = {k: v for k, v in payload.items() if k != "command"}
    return {"schema_version": JSON_FORMAT_VERSION, "command": command, **body}
