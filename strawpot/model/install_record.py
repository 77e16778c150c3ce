"""The local install record beside a built package: what its install script created or changed.

`.strawpot/<kinds>/<slug>/.install-record.json` is written after the script ran (never in strawpot.lock:
outputs differ by OS). It holds the sha256 of the script text that ran and, for each file the script
created or changed, its path, sha256, size and executable bit (a link: its target), plus the locked files
it removed. `verify`, `install` and `start` check a built package against its lock entry and this record.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from strawpot.model.sha import sha256
from strawpot.model.tree_facts import RECORD_FILE as RECORD_FILE  # re-exported: the record's name
from strawpot.model.tree_facts import RECORD_FORMAT
from valueclass import Record

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any


class RecordedFile(Record):
    """One file (or link) an install script made, as the install record keeps it."""

    path: str
    sha256: str  # for a link: ""
    size: int
    executable: bool
    link: str | None = None  # the target of a symbolic link the script made

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path, "sha256": self.sha256, "size": self.size,
                                 "executable": self.executable}
        return entry | ({"link": self.link} if self.link is not None else {})


class InstallRecord(Record):
    """What a trusted install script built for a package: its OS, the script's hash, the files it made."""

    os: str
    script_sha256: str
    outputs: tuple[RecordedFile, ...]
    removed: tuple[str, ...] = ()

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(f.path for f in self.outputs)

    def dumps(self) -> str:
        return json.dumps({
            "format": RECORD_FORMAT, "os": self.os, "script_sha256": self.script_sha256,
            "outputs": [f.as_dict() for f in self.outputs], "removed": list(self.removed),
        }, indent=2) + "\n"


_RECORD_MOST = 64 * 1024 * 1024  # bytes: far more than the record of any package's outputs


class RecordUnreadable(ValueError):
    """The record exists but is not one we wrote."""


def script_sha256(script: str) -> str:
    return sha256(script.encode("utf-8")).hexdigest()


def load_record(package_dir: str | Path) -> InstallRecord | None:
    """The record of a package folder; None when it has none; RecordUnreadable when it is damaged, or is a link, a
    FIFO or larger than any record (read without following or blocking: the tree is an agent's to write)."""
    from strawpot.model.fs import read_regular_file

    path = os.path.join(package_dir, RECORD_FILE)
    raw, found, why = read_regular_file(path, _RECORD_MOST)
    if why is not None:
        if found is None and not os.path.lexists(path):
            return None
        raise RecordUnreadable(f"cannot read {RECORD_FILE}: {why}")
    try:
        data = json.loads(raw)
        if data.get("format") != RECORD_FORMAT:
            raise RecordUnreadable(f"{RECORD_FILE} has format {data.get('format')!r}, expected {RECORD_FORMAT}")
        outputs = tuple(
            RecordedFile(str(f["path"]), str(f["sha256"]), int(f["size"]), bool(f["executable"]),
                         None if f.get("link") is None else str(f["link"]))
            for f in data["outputs"]
        )
        return InstallRecord(str(data["os"]), str(data["script_sha256"]), outputs,
                             tuple(str(p) for p in data.get("removed", [])))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, RecordUnreadable):
            raise
        raise RecordUnreadable(f"{RECORD_FILE} is damaged ({exc})") from None


def snapshot(package_dir: Path, skip: frozenset[str] = frozenset()) -> dict[str, RecordedFile]:
    """Every file and link under a package folder (but `.version`, the record and the top-level folders in `skip`:
    an integration's `.venv`, `tree_facts.unverified_dirs`), hashed."""
    found: dict[str, RecordedFile] = {}
    for dirpath, dirnames, filenames in os.walk(package_dir):
        base = Path(dirpath)
        if base == package_dir:
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
            full = base / name
            rel = full.relative_to(package_dir).as_posix()
            if rel in (".version", RECORD_FILE):
                continue
            found[rel] = describe(full, rel)
    return found


def describe(path: Path, rel: str) -> RecordedFile:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return RecordedFile(rel, "", 0, False, os.readlink(path))
    return RecordedFile(rel, file_sha256(path), st.st_size, bool(st.st_mode & stat.S_IXUSR))


def make_record(os_name: str, script: str, shipped: Mapping[str, RecordedFile],
                after: Mapping[str, RecordedFile]) -> InstallRecord:
    """What changed between the placed package (`shipped`) and the folder after its script ran."""
    outputs = tuple(f for path, f in sorted(after.items()) if shipped.get(path) != f)
    removed = tuple(sorted(set(shipped) - set(after)))
    return InstallRecord(os_name, script_sha256(script), outputs, removed)


def check_output(path: Path, recorded: RecordedFile, *, deep: bool) -> str | None:
    """How a file the script made differs from the record, or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing (built by the install script)"
    if recorded.link is not None:
        if not stat.S_ISLNK(st.st_mode) or os.readlink(path) != recorded.link:
            return "link differs from the install record"
        return None
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (the install record has a file)"
    if st.st_size != recorded.size:
        return f"size {st.st_size}, the install record has {recorded.size}"
    if bool(st.st_mode & stat.S_IXUSR) != recorded.executable:
        return "executable bit differs from the install record"
    if deep and file_sha256(path) != recorded.sha256:
        return "content differs from the install record (sha256)"
    return None


def file_sha256(path: str | Path) -> str:
    """The sha256 of the file the caller found regular (lstat): opened without following a link or blocking on a
    FIFO, so one swapped in since is an OSError or another hash, never a hang."""
    digest = sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()
