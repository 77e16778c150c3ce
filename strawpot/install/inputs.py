"""strawpot.toml and strawpot.lock as an install run reads them: once, before the file lock, refusing bad ones."""

from __future__ import annotations

from pathlib import Path

from strawpot.config_files import Project
from strawpot.install.options import LockMode, Options
from strawpot.model.errors import StrawpotError, UsageError
from strawpot.model.layout import escaping_link
from strawpot.model.lockfile import Lockfile
from strawpot.model.manifest import Manifest
from valueclass import Record


def preflight(project: Project, options: Options) -> Inputs:
    """Read strawpot.toml and strawpot.lock once, refusing unreadable ones before the file lock creates
    `.strawpot/` (bad input writes nothing)."""
    if (link := escaping_link(project)) is not None:
        raise StrawpotError(
            f"{link[0]} is a link to {link[1]}, outside {project.dir}; refused, nothing was written",
            hint="replace the link with a real folder (or remove it) and run the command again",
        )
    frozen = options.lock is LockMode.FROZEN
    manifest = None if frozen else Manifest.load(project.manifest_path)
    lock = Lockfile.load(project.lock_path) if project.lock_path.exists() else None
    if lock is None and frozen:
        raise UsageError(f"{project.lock_path}: no lockfile to install with --frozen",
                         hint="run `strawpot lock` first, or install without --frozen")
    return Inputs(manifest, lock, stamp(project.manifest_path), stamp(project.lock_path))


class Inputs(Record):
    """strawpot.toml and strawpot.lock as read before the file lock, with what each file looked like then."""

    manifest: Manifest | None
    lock: Lockfile | None
    manifest_stamp: tuple[int, int] | None
    lock_stamp: tuple[int, int] | None

    def current(self, project: Project) -> tuple[Manifest | None, Lockfile | None]:
        """The two files, read again only if another process changed one while we waited for the lock."""
        manifest, lock = self.manifest, self.lock
        if manifest is not None and stamp(project.manifest_path) != self.manifest_stamp:
            manifest = Manifest.load(project.manifest_path)
        if stamp(project.lock_path) != self.lock_stamp:
            lock = Lockfile.load(project.lock_path) if project.lock_path.exists() else None
        return manifest, lock


def stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
