"""The two consoles: progress and messages to stderr, data to stdout."""

from __future__ import annotations

from rich.console import Console

err_console = Console(stderr=True, highlight=False)
out_console = Console(highlight=False, soft_wrap=True)
