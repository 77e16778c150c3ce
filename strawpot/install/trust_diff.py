"""What changed in the files a package ships, between the installed (or the trusted) version and the one asking for
trust.

A trust pin covers the command and every shipped file, so a changed file is a changed trust question; this is what
the terminal prompt shows for it (each file changed, added or removed, with a unified diff of small text files), and
what `strawpot info` says changed since the content this machine trusted.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from strawpot.model.display import text_lines
from strawpot.model.install_record import RecordUnreadable, load_record, snapshot
from strawpot.model.lockfile import LockedFile
from strawpot.model.tree_facts import unverified_dirs

if TYPE_CHECKING:
    from strawpot.install.trust import TrustedContent

DIFF_BYTES = 32 * 1024  # a file larger than this (either side) is listed, not diffed
DIFF_LINES = 80  # a diff longer than this is cut, saying how much is left out
SINCE_LISTED = 12  # files named in one line of what changed since trusted; the rest are counted


@dataclass(frozen=True)
class FileChange:
    """One shipped file that differs: `status` is changed, added or removed; `diff` its unified diff lines (empty
    for a removed file), or `note` why none is shown (binary, too large, only the executable bit)."""

    path: str
    status: str
    diff: tuple[str, ...] = ()
    note: str = ""


def file_changes(installed: Path, new_dir: Path, new_files: Iterable[LockedFile]) -> tuple[FileChange, ...]:
    """How the files of the package staged in `new_dir` (as its lock entry lists them) differ from the files the
    installed package in `installed` shipped (what its install script built is left out)."""
    try:
        record = load_record(installed)
    except RecordUnreadable:
        record = None
    built = record.paths if record is not None else frozenset()
    old = {path: f for path, f in snapshot(installed, unverified_dirs(installed.parent.name)).items() if path not in built and f.link is None}
    new = {f.path: f for f in new_files}
    changes = []
    for path in sorted(old.keys() | new.keys()):
        before, after = old.get(path), new.get(path)
        if after is None:
            changes.append(FileChange(path, "removed"))
        elif before is None:
            changes.append(_with_diff(path, "added", None, new_dir / path))
        elif before.sha256 != after.sha256:
            changes.append(_with_diff(path, "changed", installed / path, new_dir / path))
        elif before.executable != after.executable:
            changes.append(FileChange(path, "changed", note="executable bit " + ("set" if after.executable
                                                                                  else "cleared")))
    return tuple(changes)


def _with_diff(path: str, status: str, old: Path | None, new: Path) -> FileChange:
    old_text, old_note = _text(old) if old is not None else ("", "")
    new_text, new_note = _text(new)
    if old_note or new_note:
        return FileChange(path, status, note=new_note or old_note)
    old_lines, new_lines = (text_lines(old_text) if old_text else []), (text_lines(new_text) if new_text else [])
    lines = list(difflib.unified_diff(old_lines, new_lines, f"{path} (installed)",
                                      f"{path} (new)", lineterm=""))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more diff lines not shown"]
    return FileChange(path, status, tuple(lines))


def _text(path: Path) -> tuple[str, str]:
    """(the file's text, "") when it is small UTF-8 text; else ("", why no diff is shown)."""
    from strawpot.model.fs import read_regular_file

    data, found, unreadable = read_regular_file(path, DIFF_BYTES)  # no link, no FIFO: the tree is not trusted
    if unreadable:
        if found is not None and found.st_size > DIFF_BYTES:
            return "", f"{found.st_size} bytes: too large to diff here"
        return "", f"unreadable: {unreadable}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "", f"binary, {len(data)} bytes: no diff shown"
    if "\x00" in text:
        return "", f"binary, {len(data)} bytes: no diff shown"
    return text, ""


def since_trusted(trusted: Sequence[TrustedContent], command: str, files: Iterable[LockedFile]) -> str:
    """How `command` with `files` differs from the nearest content trusted before, in one line: "since the trusted
    1.0.0: build.sh changed, extra.txt added" (the command first when it differs)."""
    now = {f.path: (f.sha256, f.executable) for f in files}

    def differences(past: TrustedContent) -> list[str]:
        found = ["the command changed"] if past.command != command else []
        for path in sorted(past.files.keys() | now.keys()):
            before, after = past.files.get(path), now.get(path)
            if before != after:
                found.append(f"{path} {'added' if before is None else 'removed' if after is None else 'changed'}")
        return found

    nearest = min(reversed(trusted), key=lambda past: len(differences(past)))
    listed = differences(nearest)
    shown = listed[:SINCE_LISTED] + ([f"{len(listed) - SINCE_LISTED} more"] if len(listed) > SINCE_LISTED else [])
    what = f" {nearest.version}" if nearest.version else ""
    return f"since the trusted{what}: {', '.join(shown) or 'nothing'}"
