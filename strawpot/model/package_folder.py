"""Read a package folder from disk: every file but dot-files, VCS folders and `.strawpotignore` matches."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from strawpot.model.kinds import Kind
from strawpot.model.package import MAX_FILE_SIZE, Issue, Package, PackageInvalid, parse_package
from strawpot.model.path_source import walk_package


def collect_files(root: Path) -> tuple[dict[str, bytes], frozenset[str], list[Issue]]:
    """Read a package folder: every file but dot-files, VCS folders and ignore-file matches."""
    files: dict[str, bytes] = {}
    executables: set[str] = set()
    issues: list[Issue] = []
    for rel, full in walk_package(root):
        if full is None:  # os.walk lists a link to a folder and never enters it: say so, as for a link to a file
            issues.append(Issue(rel, "", "links and special files are not allowed in a package"))
            continue
        data, st, problem = _read_regular_file(full)
        if problem:
            issues.append(Issue(rel, "", problem))
            continue
        files[rel] = data
        if st is not None and st.st_mode & stat.S_IXUSR:
            executables.add(rel)
    return files, frozenset(executables), issues


def _read_regular_file(path: Path) -> tuple[bytes, os.stat_result | None, str | None]:
    """Open once (never following a link, never blocking on a FIFO), then check and read that handle,
    so a file swapped between the check and the read cannot slip through."""
    special = "links and special files are not allowed in a package"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"", None, special if os.path.islink(path) else f"cannot be read: {path}"
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return b"", st, special
        if st.st_size > MAX_FILE_SIZE:
            return b"", st, f"{st.st_size} bytes, more than the limit of {MAX_FILE_SIZE} a file"
        data = fh.read(MAX_FILE_SIZE + 1)
    if len(data) > MAX_FILE_SIZE:
        return b"", st, f"more than the limit of {MAX_FILE_SIZE} bytes a file"
    return data, st, None


def load_package(path: Path, kind: Kind | None = None) -> Package:
    """Read and validate the package in folder `path` (or the folder of a main file)."""
    root = path.parent if path.is_file() else path
    if not root.is_dir():
        raise PackageInvalid([Issue(str(path), "", "no such package folder")], where=str(path))
    files, executables, issues = collect_files(root)
    try:
        package = parse_package(files, kind=kind, executables=executables, where=str(root))
    except PackageInvalid as exc:
        raise PackageInvalid(issues + exc.issues, where=str(root)) from None
    if issues:
        raise PackageInvalid(issues, where=str(root))
    return package
