"""A scratch folder with a short path: Unix socket paths (denden.sock, tmux) must fit in 108 bytes."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def short_folder(prefix: str = "sp-") -> Iterator[Path]:
    """A new folder under /tmp (not pytest's long tmp_path), removed afterwards whatever happened."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
