"""The two consoles: progress and messages to stderr, data to stdout."""

from __future__ import annotations

import os
import sys

from rich.console import Console

# Data piped to a file or another program is not cut to the 80 columns rich assumes without a terminal.
_PIPED_WIDTH = 1000

err_console = Console(stderr=True, highlight=False)
out_console = Console(
    highlight=False, soft_wrap=True,
    width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else _PIPED_WIDTH,
)
