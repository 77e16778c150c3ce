"""What install and its trust prompts read back from the installed tree (the main file's install script, a file to
diff against the trusted one) is read without following a link or blocking on a FIFO: an agent's planted file is
passed over or named, never waited on or read without end."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from strawpot.install.build import installed_script
from strawpot.install.trust_diff import _text
from strawpot.model.kinds import Kind


def _plant(path: Path, planted: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if planted == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def _within(seconds: float, call: Callable[[], object]) -> object:
    """`call()`'s result, or a failure when it is still running after `seconds` (a read that blocks or never ends)."""
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, "the planted file was waited on or read without end"
    return done[0]


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_an_installed_main_file_planted_as_a_fifo_or_an_endless_link_has_no_script(tmp_path: Path,
                                                                                   planted: str) -> None:
    _plant(tmp_path / "skills" / "a" / "SKILL.md", planted)
    assert _within(10, lambda: installed_script(tmp_path / "skills" / "a", Kind.SKILL)) is None


@pytest.mark.parametrize("planted", ["fifo", "endless link"])
def test_a_file_to_diff_planted_as_a_fifo_or_an_endless_link_is_named_not_read(tmp_path: Path, planted: str) -> None:
    _plant(tmp_path / "build.sh", planted)
    text, why = _within(10, lambda: _text(tmp_path / "build.sh"))  # type: ignore[misc]
    assert text == "" and why == "unreadable: links and special files are not allowed in a package"


def test_a_large_file_is_still_too_large_to_diff(tmp_path: Path) -> None:
    from strawpot.install.trust_diff import DIFF_BYTES

    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (DIFF_BYTES + 1))
    assert _text(big) == ("", f"{DIFF_BYTES + 1} bytes: too large to diff here")
