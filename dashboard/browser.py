"""Open the UI in the user's browser without its secret on a command line: a private redirect file, as Jupyter does."""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import tempfile
import webbrowser
from collections.abc import Iterator
from pathlib import Path

PAGE = "open.html"


def redirect_page(url: str) -> str:
    """An HTML page that sends the browser on to `url` at once (a link too, should refresh be off)."""
    quoted = html.escape(url, quote=True)
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={quoted}">'
            f'<title>StrawPot UI</title></head>\n<body><p><a href="{quoted}">Open the StrawPot UI</a></p></body></html>\n')


@contextlib.contextmanager
def redirect_file(url: str) -> Iterator[Path]:
    """A file only this user can read (0600, in a fresh 0700 folder) that redirects to `url`; removed after the
    block. A browser given its path shows `ps` and /proc/PID/cmdline (world-readable) the path, not the secret."""
    folder = Path(tempfile.mkdtemp(prefix="strawpot-ui-"))  # mkdtemp makes it 0700
    try:
        page = folder / PAGE
        fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(redirect_page(url))
        yield page
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def open_in_browser(page: Path) -> bool:
    """Ask the user's browser to open `page` (a file:// URL); False when no browser could be started."""
    return webbrowser.open(page.as_uri())
