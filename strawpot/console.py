"""The two consoles: progress and messages to stderr, data to stdout; rich is imported when one first renders.

Importing rich costs ~25 ms of a command's start-up. Output to a file or a pipe without forced colour is
plain text, so `quiet`, `is_terminal` and `line` answer there without making the rich Console; anything
else (`print` with markup, tables, progress bars) makes it on first use.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import IO, Any

    from rich.console import Console

# Text piped to a file or another program is not cut to the 80 columns rich assumes without a terminal.
_PIPED_WIDTH = 1000


def new_console(*, stderr: bool, soft_wrap: bool = False, **options: Any) -> Console:
    """A rich Console on stdout or stderr that wraps to the terminal's width, and never wraps in a pipe or a file.

    Tables too: a row piped to a file stays one line however long (COLUMNS, when set, still rules).
    """
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    piped = not terminal and not os.environ.get("COLUMNS")
    return Console(stderr=stderr, highlight=False, soft_wrap=soft_wrap or piped,
                   width=_PIPED_WIDTH if piped else None, **options)


class LazyConsole:
    """A rich Console made on first real use, standing in for it until then (attributes pass through)."""

    _stderr: bool
    _real: Console | None
    _quiet: bool

    def __init__(self, stderr: bool, real: Console | None = None) -> None:
        object.__setattr__(self, "_stderr", stderr)
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_quiet", False)

    @classmethod
    def around(cls, console: Console) -> LazyConsole:
        """A stand-in for a Console already made (tests render to a StringIO this way)."""
        return cls(stderr=console.stderr, real=console)

    @property
    def real(self) -> Console:
        made = self._real
        if made is None:
            made = new_console(stderr=self._stderr, soft_wrap=not self._stderr)
            made.quiet = self._quiet
            object.__setattr__(self, "_real", made)
        return made

    @property
    def file(self) -> IO[str]:
        if self._real is not None:
            return self._real.file
        return sys.stderr if self._stderr else sys.stdout

    @property
    def quiet(self) -> bool:
        return self._quiet if self._real is None else bool(self._real.quiet)

    @quiet.setter
    def quiet(self, value: bool) -> None:
        object.__setattr__(self, "_quiet", value)
        if self._real is not None:
            self._real.quiet = value

    @property
    def plain(self) -> bool:
        """Whether rich would print to this stream as to a file (no terminal, no colour forced): plain text."""
        return not self._may_be_terminal()

    @property
    def is_terminal(self) -> bool:
        return self._may_be_terminal() and self.real.is_terminal

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """rich's print, every text argument made terminal-safe first (package and memory text is untrusted)."""
        from strawpot.model.display import terminal_safe

        self.real.print(*(terminal_safe(o) if isinstance(o, str) else o for o in objects), **kwargs)

    def line(self, text: str, *, style: str | None = None, highlight: bool | None = None) -> None:
        """Print `text` as it is (no markup, no emoji codes, no escape sequence), in `style` on a terminal (where
        rich is imported only now: to a file or pipe the line is written as it is)."""
        from strawpot.model.display import terminal_safe

        text = terminal_safe(text)
        if self.quiet:
            return
        if not self._may_be_terminal() or (style is None and not highlight and self._real is None
                                           and not self._stderr and "\t" not in text):
            # plain, on stdout (which rich does not wrap): rich would print the text as it is (it expands tabs)
            self.file.write(text + "\n")
            return
        self.real.print(text, markup=False, emoji=False, style=style, highlight=highlight)

    def _may_be_terminal(self) -> bool:
        """False only when rich would certainly treat the stream as a file: not a TTY, no colour forced."""
        if self._real is not None or os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE") == "1":
            return True
        try:
            return bool(self.file.isatty())
        except (AttributeError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "quiet":
            object.__setattr__(self, name, value)  # the property above
        else:
            setattr(self.real, name, value)


err_console = LazyConsole(stderr=True)
out_console = LazyConsole(stderr=False)


def apply_global_options(quiet: bool, verbose: bool, color: str) -> None:
    """Apply strawpot's --quiet, --verbose and --color (read by click, or by the early answer without it)."""
    if color == "never":
        os.environ.pop("FORCE_COLOR", None)
        os.environ["NO_COLOR"] = "1"
    elif color == "always":
        os.environ.pop("NO_COLOR", None)
        os.environ["FORCE_COLOR"] = "1"
    configure(quiet=quiet, color=color)  # consoles made later read NO_COLOR/FORCE_COLOR when made
    if verbose:
        import logging

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        # one line per registry request (method, URL, status, ms) and per cache hit or revalidation;
        # httpx's own request line would repeat ours without the timing
        for name in ("hub_client",):
            logger = logging.getLogger(name)
            logger.setLevel(logging.INFO)
            logger.addHandler(handler)


def configure(*, quiet: bool, color: str) -> None:
    """Apply --quiet and --color: to consoles already made (colour from the environment otherwise)."""
    err_console.quiet = quiet
    if color == "auto":
        return
    for each in (err_console, out_console):
        if each._real is not None:
            each._real.no_color = color == "never"
            if color == "always":
                each._real._force_terminal = True  # rich has no public setter once a console exists
