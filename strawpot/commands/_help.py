"""`strawpot --help` as plain text to a pipe or file, from the command table: no click, rich or command module."""

from __future__ import annotations

import os

from strawpot.commands._table import COMMANDS

# The group's description (cli_group's `cli` is given this text) and its options as the help lists them:
# (the option's names, its metavar, its help). tests/commands/test_command_table.py derives ROOT_OPTIONS from the
# click group, so an option added there and not here fails it.
DESCRIPTION = (
    "Install, lock, publish and run AI-agent skills, roles and agents from a StrawHub registry.\n\n"
    "Exit codes: 0 ok, 1 error, 2 usage, 3 resolution conflict, 4 lock out of date,\n"
    "5 integrity failure, 6 registry unreachable, 7 missing tool, agent or environment variable.\n"
    "The project is the nearest folder, from here upward, holding strawpot.toml or strawpot.lock."
)
ROOT_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("--version", "", "Show the version and exit."),
    ("-q, --quiet", "", "No progress or status lines on stderr (errors still show)."),
    ("-v, --verbose", "", "Log every registry request (method, URL, status, ms) and cache hit on stderr."),
    ("--color", "[auto|always|never]",
     "Colour on stderr and stdout (NO_COLOR and FORCE_COLOR are honoured with auto).  [default: auto]"),
    ("-h, --help", "", "Show this message and exit."),
)
SECTIONS = {"packages": "Packages", "publishing": "Publishing", "registry": "Registry", "sessions": "Sessions",
            "other": "Other"}


def wanted(args: list[str]) -> bool:
    """True when `args` ask for the group's help and it goes to a pipe or file without forced colour (on a terminal,
    or with FORCE_COLOR, rich-click draws it)."""
    if args not in (["--help"], ["-h"]) or os.environ.get("FORCE_COLOR"):
        return False
    import sys

    return not sys.stdout.isatty()


def plain_help() -> str:
    """The group's help: usage, description, options, then the commands by section, wrapped to $COLUMNS (80)."""
    columns = os.environ.get("COLUMNS", "")
    width = max(int(columns), 40) if columns.isdigit() else 80
    lines = ["Usage: strawpot [OPTIONS] COMMAND [ARGS]...", ""]
    for paragraph in DESCRIPTION.split("\n\n"):
        lines += _wrap(paragraph.replace("\n", " "), width, "  ", "  ") + [""]
    lines.append("Options:")
    names = [f"{opts} {metavar}".rstrip() for opts, metavar, _ in ROOT_OPTIONS]
    lines += _rows(list(zip(names, (text for _, _, text in ROOT_OPTIONS), strict=True)), width)
    for key, title in SECTIONS.items():
        rows = [(name, summary) for name, (section, summary) in COMMANDS.items() if section == key]
        if rows:
            lines += ["", f"{title}:", *_rows(rows, width)]
    return "\n".join(lines) + "\n"


def _rows(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Two columns: the names, then their text wrapped beside them."""
    left = max(len(name) for name, _ in rows) + 4
    out: list[str] = []
    for name, text in rows:
        wrapped = _wrap(text, width, " " * left, " " * left)
        out.append(f"  {name.ljust(left - 2)}{wrapped[0][left:]}")
        out += wrapped[1:]
    return out


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """`text` in lines of at most `width` characters (a longer word stands alone), the first indented by `first`."""
    lines: list[str] = []
    line = first
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = rest
        line += f"{'' if not line.strip() else ' '}{word}"
    return [*lines, line]
