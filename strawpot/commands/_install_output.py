"""What the install-family commands share: argument parsing, progress on stderr, and result rendering."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

from strawpot.commands._read_only import parse_kind
from strawpot.model.errors import UsageError
from strawpot.model.plural import count

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from strawpot.install.build import Script
    from strawpot.install.options import Requested
    from strawpot.install.outcome import Callback, Outcome
    from strawpot.install.tools import MissingTool
    from strawpot.model.lockfile import LockedPackage


def parse_packages(args: Sequence[str], command: str = "install") -> list[Requested]:
    """`KIND SLUG[SPEC] ...` pairs (`role reviewer`, `skill git-workflow@^1.2`, `skill 'x>=1,<2'`)."""
    from resolver import ResolverError, parse_requirement
    from strawpot.install.options import Requested

    if len(args) % 2:
        raise UsageError(
            f"expected KIND SLUG pairs, got {count(len(args), 'argument')}: {' '.join(args)}",
            hint=(f"e.g. `strawpot {command} role reviewer skill git-workflow@^1.2`" if command in ("install", "add")
                  else f"e.g. `strawpot {command} skill {args[-1] if args else 'git-workflow'}`"),
        )
    requested = []
    for kind_text, req_text in zip(args[::2], args[1::2], strict=True):
        kind = parse_kind(kind_text)
        try:
            req = parse_requirement(req_text)
        except ResolverError as exc:
            raise UsageError(str(exc)) from None
        has_spec = req_text.strip() != req.name
        requested.append(Requested(kind, req.name, req.text if has_spec else None))
    return requested


class RichReporter:
    """Status lines and transient progress bars on stderr."""

    def __init__(self, quiet: bool = False) -> None:
        from strawpot.console import err_console

        self.console = err_console
        self.quiet = quiet

    def status(self, message: str) -> None:
        if not self.quiet:
            self.console.line(message, style="dim")

    @contextlib.contextmanager
    def progress(self, label: str, total: int) -> Iterator[Callback]:
        if self.quiet or not self.console.is_terminal:
            yield lambda pkg: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            console=self.console.real, transient=True,
        ) as bar:
            task = bar.add_task(label, total=total)

            def advance(pkg: LockedPackage) -> None:
                bar.update(task, advance=1, description=f"{label} {pkg.kind.value} {pkg.name}")

            yield advance

    def confirm_script(self, script: Script) -> bool:
        """On a terminal: the script in full (or, changed, its diff) and the shipped files that changed, then
        "trust it?" (default no). Elsewhere: False, never asked."""
        if not self.can_ask():
            return False
        import rich_click as click

        for line in script_prompt(script):
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        from strawpot.model.install_command import REMOTE_CODE_NOTE, downloads_code

        if downloads_code(script.text):
            self.console.print(f"note: this script {REMOTE_CODE_NOTE}", markup=False, highlight=False, soft_wrap=True)
        return click.confirm(f"Trust {script.id} and run it (recorded in [scripts] trusted)?", default=False, err=True)

    def running(self, message: str) -> contextlib.AbstractContextManager[None]:
        """A spinner with the elapsed time on a terminal; elsewhere a "still running" line every 10 s."""
        from strawpot.commands._long_task import long_task

        return contextlib.nullcontext() if self.quiet else long_task(self.console, message)

    def confirm_tool(self, item: MissingTool) -> bool:
        """On a terminal: the tool's install command, then "run it?" (default no; yes trusts that command)."""
        if not self.can_ask():
            return False
        import rich_click as click

        self.console.print(f"agent {item.agent} needs `{item.tool}`, which is not on PATH; its install command:",
                           markup=False, highlight=False)
        self.console.print(f"    {item.hint}", markup=False, highlight=False, soft_wrap=True)
        return click.confirm(f"Trust agent:{item.agent}'s command and run it?", default=False, err=True)

    def can_ask(self) -> bool:
        import sys

        return not self.quiet and sys.stdin.isatty() and self.console.is_terminal

    @contextlib.contextmanager
    def waiting(self, message: str) -> Iterator[None]:
        """On a terminal, a spinner with the time spent so far while the registry is asked (gone after)."""
        if self.quiet or not self.console.is_terminal:
            yield
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      console=self.console.real, transient=True) as spinner:
            spinner.add_task(message, total=None)
            yield


def script_prompt(script: Script) -> list[str]:
    """What the trust prompt shows of a script: the command (or its diff from the installed one), then each
    shipped file that differs from the installed version, with a diff of small text files."""
    import difflib

    from strawpot.model.display import text_lines

    if script.previous is not None:
        lines = [f"The install script of {script.what} changed since you trusted it:"]
        body = list(difflib.unified_diff(text_lines(script.previous), text_lines(script.text), "trusted", "new",
                                         lineterm=""))
    else:
        if script.reason == "changed" and script.changes:
            lines = [f"The install script of {script.what} is the same command as the one you trusted, but files "
                     "its package ships changed since:"]
        elif script.reason == "changed" and script.since:
            lines = [f"The install script of {script.what} or the files it runs changed ({script.since}); the "
                     "command, run in its package folder:"]
        elif script.reason == "old-pin":
            lines = [f"The install script of {script.what} was trusted by an older strawpot, which pinned the command "
                     "text only; the command, run in its package folder:"]
        else:
            why = " (strawpot.toml trusts it; not yet confirmed on this machine)" if script.reason == "unconfirmed" else ""
            lines = [f"{script.what} has an install script{why}, run in its package folder:"]
        body = text_lines(script.text)
    lines += [f"    {line}" for line in body]
    if script.changes:
        lines.append("Files that differ from the installed version (the script can run any of them):")
    for change in script.changes:
        lines.append(f"    {change.status} {change.path}" + (f" ({change.note})" if change.note else ""))
        lines += [f"        {line}" for line in change.diff]
    return lines


def _render_files(outcome: Outcome) -> None:
    """What the run wrote to the project's files: the lock, each strawpot.toml entry, a .gitignore line."""
    from strawpot.console import err_console as out

    manifest, dry = outcome.project.manifest_path.name, outcome.dry_run
    if outcome.lock_written or (dry and outcome.lock_changed):
        out.line(f"{'Would write' if dry else 'Wrote'} {outcome.project.lock_path.name} "
                 f"({count(len(outcome.lock.packages) if outcome.lock else 0, 'package')})")
    for move in outcome.moved:
        out.line(move.line())
    if not (outcome.manifest_written or dry):
        return _render_gitignore(outcome)
    for kind, name, spec in outcome.saved:
        previous = outcome.previous_specs.get((kind, name))
        if previous is None:
            out.line(f"{'Would add' if dry else 'Added'} {kind.value} {name} = \"{spec}\" to {manifest}")
        elif previous != spec:
            out.line(f"{'Would change' if dry else 'Changed'} {kind.value} {name} from \"{previous}\" to \"{spec}\" "
                     f"in {manifest}")
    for kind, name, spec in outcome.dropped:
        out.line(f"{'Would remove' if dry else 'Removed'} {kind.value} {name} = \"{spec}\" from {manifest}")
    _render_gitignore(outcome)


def _render_gitignore(outcome: Outcome) -> None:
    from strawpot.console import err_console as out

    if outcome.gitignored is not None:
        from strawpot.model.gitignore import added_note

        out.line(added_note(outcome.gitignored))


def render_outcome(outcome: Outcome, *, started: float, verb: str = "Installed") -> None:
    """Human summary of a run on stderr: one line per change, then missing tools."""
    from strawpot.console import err_console

    out = err_console
    _render_files(outcome)
    lines = []  # names and versions were validated (no markup in them): one print renders them all at once
    for change in outcome.changes:
        what = f"{change.kind.value} {change.name}"
        if change.version is None:
            lines.append(("red", "-", f"{what} {change.previous or ''}".rstrip()))
        elif change.previous and change.previous != change.version:
            lines.append(("yellow", "~", f"{what} {change.previous} → {change.version}"))
        else:
            lines.append(("green", "+", f"{what} {change.version}"))
    if lines and out.is_terminal:
        out.print("\n".join(f" [{colour}]{mark}[/] {text}" for colour, mark, text in lines), highlight=False)
    elif lines and not out.quiet:  # a file or a pipe: plain lines, without rich's rendering (~0.1 ms a line)
        out.file.write("".join(f" {mark} {text}\n" for _, mark, text in lines))
    elapsed = time.perf_counter() - started
    installed = sum(1 for c in outcome.changes if c.version is not None)
    removed = sum(1 for c in outcome.changes if c.version is None)
    prefix = "Would change" if outcome.dry_run else verb
    if installed or removed:
        parts = [f"{installed} installed"] if installed else []
        parts += [f"{removed} removed"] if removed else []
        out.line(f"{prefix}: {', '.join(parts)}, {outcome.unchanged} unchanged in {elapsed:.2f}s")
    elif outcome.builds.ran:
        out.line(f"{verb}: built {len(outcome.builds.ran)}, {outcome.unchanged} unchanged in {elapsed:.2f}s")
    else:
        out.line(f"Already up to date ({count(outcome.unchanged, 'package')}) in {elapsed:.2f}s")
    render_cooldown(outcome)
    render_missing_tools(outcome)
    render_scripts(outcome)


def render_cooldown(outcome: Outcome) -> None:
    """One line per version `[install] min_release_age` kept out of the resolution."""
    import time

    from strawpot.console import err_console
    from strawpot.model.durations import say_age
    from strawpot.model.ids import display

    age = outcome.lock.min_release_age if outcome.lock else ""
    for pid, found in outcome.too_young.items():
        for version, published in found:
            err_console.print(f"skipped {display(pid)} {version}: published {say_age(time.time() - published / 1000)} "
                              f"ago, younger than [install] min_release_age ({age})", markup=False, soft_wrap=True)


def render_scripts(outcome: Outcome) -> None:
    """Scripts that ran, would run, or wait for trust (one warning listing them all), and trust warnings."""
    from strawpot.console import err_console

    builds = outcome.builds
    for pid in builds.ran:
        err_console.line(f"Ran the install script of {pid}")
    for pid, script in builds.would_run:
        err_console.print(f"Would run the install script of {pid}: {script}", markup=False, soft_wrap=True)
    for pid, script in builds.would_skip:
        err_console.print(f"Would not run the install script of {pid} (not trusted): {script}", markup=False,
                          soft_wrap=True)
    if builds.skipped:
        ids = " ".join(builds.skipped)
        err_console.print(
            f"[yellow]warning:[/] install scripts not run (not trusted): {', '.join(builds.skipped)}; "
            f"review them (`strawpot info KIND SLUG`), then run `strawpot trust {ids}`",
            highlight=False, soft_wrap=True,
        )
    if outcome.warnings:
        from rich.markup import escape

        for warning in outcome.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)


def render_missing_tools(outcome: Outcome) -> None:
    from strawpot.console import err_console

    for tool in outcome.missing_tools:
        hint = ("its install command in strawpot.lock is not the agent's own, so none is suggested" if tool.foreign
                else f"install it with: {tool.hint}" if tool.hint else "no install command is given for this OS")
        err_console.print(
            f"[yellow]warning:[/] agent {tool.agent} needs `{tool.tool}`, which is not on PATH; {hint}",
            highlight=False, soft_wrap=True,
        )
    if outcome.missing_tools and outcome.tool_hints_ran:
        err_console.print("hint: the install commands ran and these tools are still not on PATH; install them "
                          "by hand (or open a new shell if they went somewhere PATH does not reach yet)",
                          markup=False, style="dim")
    elif any(tool.hint and not tool.foreign for tool in outcome.missing_tools):  # only when the flag has work
        err_console.print("hint: rerun with --install-tools to run the install commands of agents you trusted "
                          "(`strawpot trust agent:SLUG`)", markup=False, style="dim")

