"""Apply the change between two git trees to the user's working tree: all or nothing, through a journal.

`plan` reads the user's tree only: every path the change touches must be as it was when the session started
(same type, content and exec bit; a path the session adds must be free), and no write may go through a
symlink or over a folder that still holds something (an ignored `__pycache__/`, say). `apply` then saves the
exact state of every path it will touch (a hard link, else a copy, of each file; each link's target; each
folder's mode) and writes `journal.json` before the first change, applies, and on any failure restores that
state. A process killed half-way leaves the journal: `recover` (run by the next `strawpot start` with a
worktree and by `strawpot sessions --prune`) restores the tree; a journal marked done is only removed.

A journal is only ever read from the run's state folder in the repository's own git folder (which no clone
carries and no sandboxed agent can write), and `recover` replays it only when it names the working tree it is
asked about and every path in it is one a merge-back can write (relative, no `..`, nothing under `.git*`, no
folder on the way a link the merge did not make).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from orchestrator.repo_guard import SafeGit
from strawpot.model.fs import atomic_write, current_umask, file_lock

JOURNAL = "journal.json"
LOCK = "merge.lock"
ABSENT = "0" * 6
LINK, GITLINK = "120000", "160000"
_CHUNK = 1 << 20


def _no_checkpoint(step: str) -> None:
    return None


checkpoint: Callable[[str], None] = _no_checkpoint  # called between steps; the crash test kills the process there


@dataclass(frozen=True)
class Change:
    """One path of `git diff-tree -r --raw`: old and new mode and object (ABSENT mode when there is none)."""

    path: str
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str


@dataclass
class Plan:
    deletes: list[str] = field(default_factory=list)  # files and links to remove, deepest first
    rmdirs: list[str] = field(default_factory=list)  # folders the deletes empty, deepest first
    mkdirs: list[str] = field(default_factory=list)  # shallowest first
    writes: list[Change] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # any: nothing is applied


def changes(g: SafeGit, base: str, new: str) -> list[Change]:
    raw = g.out("diff-tree", "-r", "-z", "--no-renames", "--raw", base, new).split(b"\0")
    found = []
    for meta, path in zip(raw[0::2], raw[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old_sha, new_sha, _ = meta[1:].decode().split(" ", 4)
        found.append(Change(os.fsdecode(path), old_mode, new_mode, old_sha, new_sha))
    return found


def plan(top: Path, wanted: list[Change], object_format: str) -> Plan:
    """What applying `wanted` to the tree at `top` takes, or why it cannot be done (`conflicts`)."""
    result = Plan()
    deleted = {c.path for c in wanted if c.new_mode == ABSENT}
    written = {c.path for c in wanted if c.new_mode != ABSENT}
    for c in wanted:
        for parent in _parents(c.path):
            kind = _kind(top / parent)
            if kind in ("file", "link") and parent not in deleted:
                result.conflicts.append(f"{parent} is a {'symlink' if kind == 'link' else 'file'} in your tree; "
                                        f"the session writes {c.path} inside it")
        if c.old_mode != ABSENT and not _matches(top / c.path, c.old_mode, c.old_sha, object_format):
            result.conflicts.append(f"{c.path} changed in your tree since the session started")
    needed = {parent for path in written for parent in _parents(path)}
    emptied: set[str] = set()
    for folder in sorted(sorted({p for path in deleted for p in _parents(path)} | (written & _dirs(top, written))),
                         key=_depth, reverse=True):
        if folder in needed or _kind(top / folder) != "dir":
            continue
        left = [name for name in _listdir(top / folder) if _join(folder, name) not in deleted | emptied]
        if not left:
            emptied.add(folder)
        elif folder in written:
            result.conflicts.append(f"{_first_leaf(top, folder, deleted)} is in your tree (untracked or ignored) "
                                    "where the session puts a file or a link")
    for c in wanted:
        if c.old_mode == ABSENT and c.new_mode != ABSENT and _kind(top / c.path) != "absent" \
                and c.path not in emptied:
            result.conflicts.append(f"{c.path} exists in your tree (untracked or ignored); the session adds it")
    result.deletes = sorted(sorted(deleted), key=_depth, reverse=True)
    result.rmdirs = sorted(sorted(emptied), key=_depth, reverse=True)
    result.mkdirs = sorted(sorted(p for p in needed if _kind(top / p) != "dir" or p in emptied), key=_depth)
    result.writes = [c for c in wanted if c.new_mode != ABSENT]
    return result


def apply(g: SafeGit, top: Path, work: Path, todo: Plan, fmt: str = "sha1") -> None:
    """Carry out `todo` (conflict-free) on `top`; on any failure restore what was there and raise.

    A file's new content is copied from the session's work tree (`g.work_tree`) when it still hashes to the
    committed object, else streamed out of git: never held in memory either way. The lock beside `work` is
    held throughout, so `recover` in another process never undoes a merge that is still going on.
    """
    with file_lock(work.parent / LOCK):
        _apply(g, top, work, todo, fmt)


def _apply(g: SafeGit, top: Path, work: Path, todo: Plan, fmt: str) -> None:
    if work.exists():
        shutil.rmtree(work)
    (work / "backup").mkdir(parents=True)
    temps = {c.path: _join(os.path.dirname(c.path), f".strawpot-new-{i}") for i, c in enumerate(todo.writes)}
    touched = [*todo.deletes, *todo.rmdirs, *todo.mkdirs, *(c.path for c in todo.writes), *temps.values()]
    entries: dict[str, dict[str, Any]] = {}
    for path in touched:
        if path not in entries:
            entries[path] = _save(top, path, work / "backup", len(entries))
            checkpoint(f"save {path}")
    _journal(work, top, "applying", list(entries.values()))
    try:
        checkpoint("journal")
        for path in todo.deletes:
            (top / path).unlink()
            checkpoint(f"delete {path}")
        for path in todo.rmdirs:
            (top / path).rmdir()
            checkpoint(f"rmdir {path}")
        for path in todo.mkdirs:
            if _kind(top / path) != "absent":
                (top / path).unlink()  # a file the change turns into a folder (already deleted, unless racing)
            (top / path).mkdir()
            checkpoint(f"mkdir {path}")
        for c in todo.writes:
            _write(g, top / temps[c.path], c, fmt)
            checkpoint(f"stage {c.path}")
            os.replace(top / temps[c.path], top / c.path)
            checkpoint(f"write {c.path}")
    except BaseException:
        restore(top, work)
        raise
    _journal(work, top, "done", [])
    checkpoint("done")
    shutil.rmtree(work, ignore_errors=True)


def recover(work: Path, top: Path) -> str | None:
    """Finish what a killed `apply` into `top` left in `work`: restore the user's tree, or only tidy up; what
    was done. A merge still going on in a live process (its lock held), or a journal that names another tree or
    a path no merge-back writes, is left alone."""
    with open(work.parent / LOCK, "a+b") as held:
        try:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        return _recover(work, top)


def _recover(work: Path, top: Path) -> str | None:
    try:
        data = json.loads((work / JOURNAL).read_text())
    except (OSError, ValueError):
        if work.is_dir():
            shutil.rmtree(work, ignore_errors=True)  # killed before the journal existed: nothing was touched
        return None
    if not _trusted(data, top):
        return None
    if data.get("state") == "done":
        shutil.rmtree(work, ignore_errors=True)
        return None
    restore(top, work)
    return f"an interrupted merge-back into {top} was undone: its files are as they were before it"


def _trusted(data: Any, top: Path) -> bool:
    """Whether a journal is one `apply` into `top` could have written: its tree, and only paths it writes."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return False
    if os.path.realpath(str(data.get("top", ""))) != os.path.realpath(top) or not Path(str(data["top"])).is_absolute():
        return False
    if not all(isinstance(e, dict) and _writable_path(e.get("path")) and str(e.get("backup", "")).isdigit()
               and e.get("kind") in ("absent", "dir", "file", "link") for e in data["entries"]):
        return False
    # a link on the way to a path is one the merge itself touched (restore never goes through it), else forged
    touched = {e["path"] for e in data["entries"]}
    return all(_kind(top / parent) != "link" or parent in touched for path in touched for parent in _parents(path))


def _writable_path(path: Any) -> bool:
    """A path a merge-back may touch: relative, normal, and no part of it `.git*` (merge.py refuses those)."""
    if not isinstance(path, str) or not path or path.startswith("/"):
        return False
    return all(part not in ("", ".", "..") and not part.lower().startswith(".git") for part in path.split("/"))


def restore(top: Path, work: Path) -> None:
    """Put every path the journal in `work` names back as it was, then drop the journal."""
    entries: list[dict[str, Any]] = json.loads((work / JOURNAL).read_text())["entries"]
    for entry in sorted(entries, key=lambda e: _depth(e["path"]), reverse=True):  # clear what is in the way
        if _under_link(top, entry["path"]):
            continue  # what is behind a link is not the tree's: the link itself is an entry, handled below
        path, now, want = top / entry["path"], _kind(top / entry["path"]), entry["kind"]
        if now == "dir" and want != "dir":
            with contextlib.suppress(OSError):  # still holds something new of the user's: leave it
                path.rmdir()
        elif now in ("file", "link") and want in ("absent", "dir"):
            path.unlink()
    for entry in sorted(entries, key=lambda e: _depth(e["path"])):
        if not _under_link(top, entry["path"]):  # else its folder was put back as the link it was: not the tree's
            _put_back(top / entry["path"], entry, work)
    shutil.rmtree(work, ignore_errors=True)


def _put_back(path: Path, entry: dict[str, Any], work: Path) -> None:
    """One journal entry's folder, file or link as it was (an absent one is cleared already)."""
    if entry["kind"] == "dir":
        if _kind(path) != "dir":
            path.mkdir()
        os.chmod(path, entry["mode"])
    elif entry["kind"] == "file":
        backup = work / "backup" / entry["backup"]
        if _kind(path) == "file" and os.path.samestat(path.lstat(), backup.lstat()):
            return
        tmp = path.with_name(f".strawpot-restore-{entry['backup']}")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        try:
            os.link(backup, tmp)
        except OSError:
            shutil.copy2(backup, tmp)
        os.chmod(tmp, entry["mode"])
        os.replace(tmp, path)
    elif entry["kind"] == "link":
        if _kind(path) == "link" and os.readlink(path) == entry["target"]:
            return
        tmp = path.with_name(f".strawpot-restore-{entry['backup']}")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.symlink(entry["target"], tmp)
        os.replace(tmp, path)


def _under_link(top: Path, rel: str) -> bool:
    return any(_kind(top / parent) == "link" for parent in _parents(rel))


def _save(top: Path, rel: str, backups: Path, number: int) -> dict[str, Any]:
    path = top / rel
    kind = _kind(path)
    entry: dict[str, Any] = {"path": rel, "kind": kind, "backup": str(number)}
    if kind == "dir":
        entry["mode"] = stat.S_IMODE(path.lstat().st_mode)
    elif kind == "link":
        entry["target"] = os.readlink(path)
    elif kind == "file":
        entry["mode"] = stat.S_IMODE(path.lstat().st_mode)
        try:
            os.link(path, backups / str(number))  # the very inode: replacing the path never writes into it
        except OSError:
            shutil.copy2(path, backups / str(number))
    return entry


def _journal(work: Path, top: Path, state: str, entries: list[dict[str, Any]]) -> None:
    atomic_write(work / JOURNAL, json.dumps({"version": 1, "top": str(top), "state": state, "entries": entries}))


def _write(g: SafeGit, tmp: Path, c: Change, fmt: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    if c.new_mode == LINK:
        os.symlink(os.fsdecode(g.out("cat-file", "blob", c.new_sha)), tmp)
        return
    mode = (0o777 if c.new_mode == "100755" else 0o666) & ~current_umask()
    with open(tmp, "xb") as fh:
        if not _copy_checked(g.work_tree / c.path, fh, c.new_sha, fmt):
            fh.seek(0)
            fh.truncate()
            g.out("cat-file", "blob", c.new_sha, stdout=fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)


def _copy_checked(source: Path, fh: BinaryIO, sha: str, fmt: str) -> bool:
    """Copy `source` (a regular file, never through a link) to `fh` if its bytes are the object `sha`."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as src:
        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        digest = hashlib.new(fmt, b"blob %d\0" % size)
        copied = 0
        for chunk in iter(lambda: src.read(_CHUNK), b""):
            digest.update(chunk)
            fh.write(chunk)
            copied += len(chunk)
    return copied == size and digest.hexdigest() == sha


def _matches(path: Path, mode: str, sha: str, object_format: str) -> bool:
    kind = _kind(path)
    if mode == LINK:
        return kind == "link" and _hash(os.fsencode(os.readlink(path)), object_format) == sha
    if kind != "file":
        return False
    if mode == "100755" and not os.access(path, os.X_OK) or mode == "100644" and path.stat().st_mode & 0o100:
        return False
    return _hash_file(path, object_format) == sha


def _hash(data: bytes, object_format: str) -> str:
    return hashlib.new(object_format, b"blob %d\0" % len(data) + data).hexdigest()


def _hash_file(path: Path, object_format: str) -> str:
    digest = hashlib.new(object_format, b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _kind(path: Path) -> str:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return "absent"
    except NotADirectoryError:
        return "absent"
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file"


def _dirs(top: Path, paths: set[str]) -> set[str]:
    return {p for p in paths if _kind(top / p) == "dir"}


def _listdir(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def _first_leaf(top: Path, folder: str, deleted: set[str]) -> str:
    for here, dirs, files in _walk(top / folder):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(here, name), top)
            if rel not in deleted:
                return rel
        if not dirs and not files and os.path.relpath(here, top) != folder:
            return os.path.relpath(here, top) + "/"
    return folder + "/"


def _walk(path: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    yield from os.walk(path)  # never follows symlinks: a link to a folder is listed as a folder name, no deeper


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _depth(path: str) -> int:
    return path.count("/")


