"""Path sources: which files a package folder holds, and the digest of a local package that a lock depends on.

Stdlib only: the no-op install check (`strawpot.install.fastcheck`) computes the same manifest hash as
`Manifest.dependency_hash`, path sources' contents included, without importing anything heavy.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from strawpot.model.layout import expand_members
from strawpot.model.sha import sha256

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

PATH_PREFIX = "path+"
IGNORE_FILE = ".strawpotignore"
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "__pycache__", "node_modules"})


def walk_package(root: Path) -> Iterator[tuple[str, Path | None]]:
    """(relative POSIX path, full path) of every file of a package folder, sorted: dot-files, VCS folders and
    `.strawpotignore` matches left out; (relative path, None) for a link to a folder, which is never entered."""
    patterns = _ignore_patterns(root)
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d not in VCS_DIRS and not _ignored((base / d).as_posix(), d, patterns)
        )
        for d in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            dirnames.remove(d)
            yield (base / d).as_posix(), None
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            rel = (base / name).as_posix()
            if not _ignored(rel, name, patterns):
                yield rel, Path(dirpath) / name


def _ignored(rel: str, name: str, patterns: list[str]) -> bool:
    """A file or folder matches an ignore pattern by its relative path or by its own name."""
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def _ignore_patterns(root: Path) -> list[str]:
    ignore = root / IGNORE_FILE
    if not ignore.is_file():
        return []
    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#")]


def folder_digest(root: Path) -> str | None:
    """A sha256 over every file of the package folder (path, executable bit, content); None if it is not a folder."""
    if not root.is_dir():
        return None
    digest = sha256()
    for rel, full in walk_package(root):
        digest.update(rel.encode() + b"\0")
        if full is None:
            digest.update(b"link\0")
            continue
        try:
            st = os.lstat(full)
            data = b"" if not stat.S_ISREG(st.st_mode) else full.read_bytes()
        except OSError:
            digest.update(b"unreadable\0")
            continue
        kind = b"x" if st.st_mode & stat.S_IXUSR else b"-"
        digest.update(kind + sha256(data).digest() if stat.S_ISREG(st.st_mode) else b"special")
    return "sha256:" + digest.hexdigest()


def normal_path(text: str) -> str:
    """A path source as the lock writes it: POSIX separators, no `./`, no trailing `/`."""
    return PurePosixPath(text.replace("\\", "/")).as_posix()


def path_row(project_dir: Path, path: str) -> list[str] | None:
    """What a `{ path = ... }` requirement adds to the manifest's dependency hash; None if the folder is missing."""
    digest = folder_digest(project_dir / path)
    return None if digest is None else [PATH_PREFIX + normal_path(path), digest]


def workspace_rows(project_dir: Path, data: dict[str, Any]) -> list[list[str]] | None:
    """What a `[workspace]` adds to the dependency hash: every member folder's digest ([] without a workspace);
    None when the table is malformed (the full reader reports it)."""
    table = data.get("workspace")
    if table is None:
        return []
    if not isinstance(table, dict):
        return None
    members, exclude = table.get("members", []), table.get("exclude", [])
    if not (isinstance(members, list) and isinstance(exclude, list)):
        return None
    dirs, _ = expand_members(project_dir, [str(m) for m in members], [str(x) for x in exclude])
    rows = []
    for folder in dirs:
        digest = folder_digest(folder)
        if digest is not None:
            rows.append(["workspace", folder.relative_to(project_dir).as_posix(), digest])
    return rows
