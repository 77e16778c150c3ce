"""Where a project's files live: the manifest, the lock, the installed tree and the session state.

Import-light on purpose (stdlib only): the no-op install path reads it before anything heavy loads.
"""

from __future__ import annotations

import os
from pathlib import Path

from strawpot.model.folders import TREE_DIR as TREE_DIR  # re-exported: the tree's name, decided in folders
from strawpot.model.folders import home_dir, project_tree
from strawpot.model.kinds import KIND_ORDER
from valueclass import Record

MANIFEST_NAME = "strawpot.toml"
LOCK_NAME = "strawpot.lock"
# strawhub 0.1.54 keeps its own JSON lockfile at $STRAWPOT_HOME/strawpot.lock, so the global scope's
# manifest and lock live one folder down, where neither tool overwrites the other's file.
GLOBAL_SCOPE_DIR = "global"


class Project(Record):
    """A project folder (`strawpot.toml`, `strawpot.lock`, `.strawpot/`), or the global scope."""

    dir: Path
    is_global: bool = False

    @classmethod
    def at(cls, project: Path | None = None, *, is_global: bool = False) -> Project:
        """The global scope, the folder given (`--project`), or the project found from the current folder."""
        if is_global:
            return cls(home_dir() / GLOBAL_SCOPE_DIR, is_global=True)
        if project is not None:
            return cls(project.resolve())
        return cls(find_project_dir(Path.cwd()) or Path.cwd().resolve())

    @property
    def exists(self) -> bool:
        """Whether the folder holds a project yet (a strawpot.toml or a strawpot.lock)."""
        return self.manifest_path.is_file() or self.lock_path.is_file()

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST_NAME

    @property
    def lock_path(self) -> Path:
        return self.dir / LOCK_NAME

    @property
    def tree_root(self) -> Path:
        """The installed tree: `.strawpot/` in a project, `$STRAWPOT_HOME` itself for the global scope."""
        return self.dir.parent if self.is_global else project_tree(self.dir)

    @property
    def lock_file_path(self) -> Path:
        """The advisory file lock that serialises strawpot processes on this project."""
        return self.tree_root / ".lock"

    @property
    def sessions_dir(self) -> Path:
        return self.tree_root / "sessions"

    @property
    def memory_dir(self) -> Path:
        return self.tree_root / "memory"

    @property
    def files_dir(self) -> Path:
        """Files the user attached to the project; agents get it as `--files-dir` when it exists."""
        return self.tree_root / "files"


def find_project_dir(start: Path) -> Path | None:
    """The nearest folder from `start` upward holding strawpot.toml or strawpot.lock (as cargo and uv search),
    or the root of the workspace that folder belongs to: the nearest folder above whose strawpot.toml declares a
    `[workspace]` naming it (or `start`) as a member, as cargo finds a workspace root from inside a member.

    $STRAWPOT_HOME is never taken for a project: strawhub 0.1.54 keeps its own JSON strawpot.lock there.
    """
    here = start.resolve()
    home = home_dir().resolve()
    nearest: Path | None = None
    for folder in (here, *here.parents):
        if folder == home:
            continue
        has_manifest = (folder / MANIFEST_NAME).is_file()
        if nearest is None and (has_manifest or (folder / LOCK_NAME).is_file()):
            nearest = folder
            if _workspace_members(folder) is not None:
                return folder
            continue
        if has_manifest and (globs := _workspace_members(folder)) is not None:
            rel = (nearest or here).relative_to(folder).as_posix()
            if any(glob_matches(rel, glob, inside=True) for glob in globs):
                return folder
    return nearest


def _workspace_members(folder: Path) -> list[str] | None:
    """The member globs of `folder/strawpot.toml` when it declares a `[workspace]`, else None (cheap when not: no
    TOML parser imported)."""
    from strawpot.model.fs import read_own_text

    try:
        text = read_own_text(folder / MANIFEST_NAME)
    except (OSError, UnicodeDecodeError):
        return None
    if "workspace" not in text:
        return None
    import tomllib

    try:
        table = tomllib.loads(text).get("workspace")
    except tomllib.TOMLDecodeError:
        return None  # the command that reads the manifest reports it, with its place
    if not isinstance(table, dict):
        return None
    members = table.get("members", [])
    return [m for m in members if isinstance(m, str)] if isinstance(members, list) else []


def glob_matches(rel: str, glob: str, *, inside: bool = False) -> bool:
    """Whether the relative folder `rel` is named by the folder glob `glob` (a `*` never crosses a `/`);
    `inside`: or lies inside such a folder."""
    import fnmatch

    parts, pattern = rel.split("/"), glob.strip("/").split("/")
    if len(parts) < len(pattern) or (len(parts) > len(pattern) and not inside):
        return False
    return all(fnmatch.fnmatchcase(p, g) for p, g in zip(parts, pattern, strict=False))


def expand_members(root: Path, members: list[str], exclude: list[str]) -> tuple[list[Path], list[str]]:
    """(the member folders the globs name minus the excluded, sorted; the globs that name no folder)."""
    found: dict[Path, None] = {}
    empty: list[str] = []
    for pattern in members:
        try:
            dirs = sorted(p for p in root.glob(pattern) if p.is_dir() and not p.name.startswith("."))
        except (ValueError, OSError):
            dirs = []
        if not dirs:
            empty.append(pattern)
        found.update(dict.fromkeys(dirs))
    kept = [d for d in found if not any(glob_matches(d.relative_to(root).as_posix(), x) for x in exclude)]
    return sorted(kept), empty


def remove_empty_tree(project: Project) -> None:
    """Remove the installed tree's folder if it holds nothing but the advisory lock file."""
    try:
        if {p.name for p in project.tree_root.iterdir()} <= {project.lock_file_path.name}:
            project.lock_file_path.unlink(missing_ok=True)
            project.tree_root.rmdir()
    except OSError:
        pass


# The folders of the installed tree that hold packages.
_KIND_FOLDERS = tuple(kind.plural for kind in KIND_ORDER)


def escaping_link(project: Project) -> tuple[Path, Path] | None:
    """(link, where it points) for the first link in the installed tree that leads out of the project,
    else None. Checked: the tree folder, everything directly in it, each kind folder and each package
    folder: what install creates, replaces or writes into. (In the global scope the tree folder itself
    may be a link; what is inside it may not lead out of it.)"""
    base = project.tree_root if project.is_global else project.dir
    try:
        base = base.resolve()
    except OSError:
        return None
    root = project.tree_root
    candidates = [] if project.is_global else [root]
    try:
        if root.is_dir():
            children = sorted(root.iterdir())
            candidates += children
            for folder in (root / name for name in _KIND_FOLDERS):
                if folder.is_dir() and not leads_out(folder, base):
                    candidates += sorted(folder.iterdir())
    except OSError:
        return None  # unreadable: the install itself reports it
    for path in candidates:
        if leads_out(path, base):
            return path, Path(os.path.realpath(path))
    return None


def leads_out(path: Path, base: Path) -> bool:
    if not path.is_symlink():
        return False
    return not Path(os.path.realpath(path)).is_relative_to(base)
