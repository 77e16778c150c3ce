"""Progress of a task that may run long (an install script): a spinner on a terminal, a line every 10 s elsewhere."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strawpot.console import LazyConsole

HEARTBEAT = 10.0  # seconds between two "still running" lines in a log file or a CI job


@contextlib.contextmanager
def long_task(console: LazyConsole, message: str, *, every: float = HEARTBEAT) -> Iterator[None]:
    """Show that `message`'s task is still going while the block runs; nothing is left on a terminal after."""
    if console.quiet:
        yield
        return
    if console.is_terminal:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      console=console.real, transient=True) as spinner:
            spinner.add_task(message, total=None)
            yield
        return
    started, done = time.monotonic(), threading.Event()

    def beat() -> None:
        while not done.wait(every):
            console.line(f"{message}: still running after {time.monotonic() - started:.0f} s")

    thread = threading.Thread(target=beat, name="strawpot-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
