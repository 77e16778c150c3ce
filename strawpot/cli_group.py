"""The click group of `strawpot`: one module per command, imported when it runs, and failures mapped to exit codes."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click as plain_click
import rich_click as click

from strawpot import __version__
from strawpot.commands._help import DESCRIPTION, SECTIONS
from strawpot.commands._table import COMMANDS

click.rich_click.SHOW_ARGUMENTS = True
click.rich_click.STYLE_ERRORS_SUGGESTION = "dim"


def _command_modules() -> list[str]:
    """The modules of the commands, from the table (no module is imported to list them)."""
    return [name.replace("-", "_") for name in COMMANDS]


def _load(module_name: str) -> Any:
    return importlib.import_module(f"strawpot.commands.{module_name}")


def _summary(name: str) -> click.Command:
    """A stand-in for the command `name` with its summary alone, for the command list of `--help`."""
    section, summary = COMMANDS[name]
    return click.RichCommand(name=name, help=summary)


class StrawpotGroup(click.RichGroup):
    """Imports a command's module only when that command runs; listing them reads the table."""

    _listing = False  # while help lists the commands: their summaries do, without importing a module

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [m.replace("_", "-") for m in _command_modules()]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = cmd_name.replace("-", "_")
        if module_name not in _command_modules():
            return None
        if self._listing and cmd_name in COMMANDS:
            return _summary(cmd_name)
        command: click.Command = _load(module_name).command
        command.name = cmd_name
        return command

    def resolve_command(
        self, ctx: plain_click.Context, args: list[str]
    ) -> tuple[str | None, plain_click.Command | None, list[str]]:
        name = args[0] if args else ""
        # while completing (resilient parsing), an unknown word completes nothing: no error on the user's prompt
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            from strawpot.model.errors import UsageError
            from strawpot.model.suggest import did_you_mean

            raise UsageError(f"unknown command {name!r}",
                             hint=did_you_mean(name, self.list_commands(ctx), show="`strawpot {}`")
                             or "`strawpot --help` lists the commands")
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: click.RichContext, formatter: Any) -> None:  # type: ignore[override]
        groups: dict[str, list[str]] = {title: [] for title in SECTIONS.values()}
        for name in self.list_commands(ctx):
            section = COMMANDS[name][0] if name in COMMANDS else getattr(_load(name.replace("-", "_")), "SECTION", "other")
            groups[SECTIONS.get(section, "Other")].append(name)
        formatter.config.command_groups = {
            ctx.command_path: [{"name": title, "commands": cmds} for title, cmds in groups.items() if cmds]
        }
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


@click.group(cls=StrawpotGroup, help=DESCRIPTION, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="strawpot")
@click.option("--quiet", "-q", is_flag=True, help="No progress or status lines on stderr (errors still show).")
@click.option("--verbose", "-v", is_flag=True, help="Log every registry request (method, URL, status, ms) and cache hit on stderr.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour on stderr and stdout (NO_COLOR and FORCE_COLOR are honoured with auto).")
def cli(quiet: bool, verbose: bool, color: str) -> None:
    from strawpot.console import apply_global_options

    apply_global_options(quiet, verbose, color)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure prints one `error:` line (and a hint) and exits with its code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=argv, prog_name="strawpot", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:
        code = failure(exc, args)
        if code is None:
            raise
        return code
    # Without standalone mode click returns ctx.exit(n)'s code (or the callback's value).
    return result if isinstance(result, int) else 0


def failure(exc: BaseException, args: list[str]) -> int | None:
    """Print the one line (and hint) of an expected failure of command line `args`, and return its exit code; None
    for an exception no command should raise (a bug: its traceback shows)."""
    from strawpot.failures import expected, print_error, print_json_error

    json_for = (lambda: _command_path(args)) if "--json" in args else None
    if isinstance(exc, plain_click.Abort):
        print_error("aborted", None, json_for=json_for, code=130)
        return 130
    if isinstance(exc, plain_click.UsageError):  # one line and a hint, as every other failure (not click's box)
        message, hint = _usage_text(exc)
        print_error(message, hint, json_for=json_for, code=2)
        return 2
    if isinstance(exc, plain_click.ClickException):
        exc.show()
        code = 2 if isinstance(exc, click.UsageError) else exc.exit_code
        if json_for is not None:
            print_json_error(json_for(), code, exc.format_message(), None)
        return code
    if isinstance(exc, plain_click.exceptions.Exit):
        return int(exc.exit_code)
    return expected(exc, args, lambda: _command_path(args))


def _usage_text(exc: plain_click.UsageError) -> tuple[str, str]:
    """The message and hint of a usage error click found (a missing argument, an unknown option)."""
    from strawpot.model.suggest import did_you_mean

    path = exc.ctx.command_path if exc.ctx is not None else "strawpot"
    hint = f"`{path} --help` shows how to use it"
    if isinstance(exc, plain_click.MissingParameter) and exc.param is not None and exc.param.name == "packages":
        return (f"`{path}` needs the packages to work on, as KIND SLUG pairs",
                f"e.g. `{path} skill git-workflow`; {hint}")
    command = exc.ctx.command if exc.ctx is not None else None
    if isinstance(exc, plain_click.exceptions.NoSuchCommand) and isinstance(command, plain_click.Group):
        assert exc.ctx is not None
        known = command.list_commands(exc.ctx)
        return f"unknown command {exc.command_name!r}", did_you_mean(exc.command_name, known, show=f"`{path} {{}}`") or hint
    if isinstance(exc, plain_click.NoSuchOption) and command is not None:
        known = [name for param in command.params for name in (*param.opts, *param.secondary_opts)]
        return f"unknown option {exc.option_name!r}", did_you_mean(exc.option_name, known, show="`{}`") or hint
    return exc.format_message().rstrip("."), hint


def _command_path(args: list[str]) -> str:
    """The command words at the start of `args` ("install", "registry token list")."""
    words: list[str] = []
    current: Any = cli
    ctx = plain_click.Context(cli)
    for arg in args:
        if not isinstance(current, plain_click.Group):
            break
        found = current.get_command(ctx, arg)
        if found is None:
            break
        words.append(arg)
        current = found
    return " ".join(words)
