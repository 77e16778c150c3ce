"""Read a package folder from disk: every file but dot-files, VCS folders and `.strawpotignore` matches."""

from __future__ import annotations

import stat
from pathlib import Path

from strawpot.model.fs import read_regular_file
from strawpot.model.kinds import Kind
from strawpot.model.package import Issue, Package, PackageInvalid, parse_package
from strawpot.model.package_limits import MAX_FILE_SIZE
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
        data, st, problem = read_regular_file(full, MAX_FILE_SIZE)
        if problem:
            issues.append(Issue(rel, "", problem))
            continue
        files[rel] = data
        if st is not None and st.st_mode & stat.S_IXUSR:
            executables.add(rel)
    return files, frozenset(executables), issues


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
