"""What a strawhub (0.1.x) install left behind, read as requirements: its JSON lockfile and its install tree.

strawhub installs into a root (`./.strawpot`, or `$STRAWPOT_HOME` with `--global`) holding
`<kinds>/<slug>/` folders, each with the package's published files (its main file, SKILL.md, ROLE.md ...)
and a `.version` file, beside a JSON `strawpot.lock` whose `directInstalls` are what the user asked for.
Everything here is untrusted: one bad entry refuses the whole import, before anything is written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strawpot.model.errors import UsageError
from strawpot.model.kinds import KIND_ORDER, Kind

STRAWHUB_LOCK = "strawpot.lock"
_MAX_LOCK_BYTES = 8 * 1024 * 1024
_MAX_MAIN_BYTES = 1024 * 1024
_MAX_VERSION_BYTES = 256

Key = tuple[Kind, str]


@dataclass
class _Tree:
    """The packages of an install tree: versions and the packages each one depends on."""

    versions: dict[Key, str] = field(default_factory=dict)
    needs: dict[Key, set[Key]] = field(default_factory=dict)


def requirements_from_lock(path: Path) -> dict[Kind, dict[str, str]]:
    """The direct installs of a strawhub JSON lockfile as {kind: {slug: "^version"}}."""
    direct, _ = _read_lock(path, None)
    return _as_requirements(direct)


def requirements_from_root(root: Path) -> dict[Kind, dict[str, str]]:
    """The directly installed packages of a strawhub root: its lockfile's direct installs (when it has one)
    and every package of the tree that the lockfile does not know and that no other installed one needs."""
    base = Path(os.path.realpath(root))
    if not base.is_dir():
        raise UsageError(f"{root}: no such folder", hint="give the folder strawhub installed into (its .strawpot)")
    tree = _read_tree(root, base)
    lock_path = root / STRAWHUB_LOCK
    direct: dict[Key, str] = {}
    locked: set[Key] = set()
    if lock_path.is_file() or lock_path.is_symlink():
        direct, locked = _read_lock(lock_path, base)
    if not direct and not locked and not tree.versions:
        raise UsageError(f"{root}: neither a strawhub lockfile nor installed packages there",
                         hint="give the folder strawhub installed into (its .strawpot), or a lockfile with --from-lock")
    for key in direct:
        direct[key] = tree.versions.get(key, direct[key])  # what is on disk wins over what the lock says
    for key in _top_level(tree, exclude=locked | set(direct)):
        direct[key] = tree.versions[key]
    return _as_requirements(direct)


def _top_level(tree: _Tree, exclude: set[Key]) -> list[Key]:
    """Installed packages nothing else installed needs; then, for dependency cycles, one of each cycle."""
    needed = {dep for key, deps in tree.needs.items() for dep in deps if dep != key}
    rest = sorted((k for k in tree.versions if k not in exclude), key=_order)
    chosen = [k for k in rest if k not in needed]
    reached = _reach(tree, [*exclude, *chosen])
    for key in rest:
        if key not in reached:
            chosen.append(key)
            reached |= _reach(tree, [key])
    return chosen


def _reach(tree: _Tree, start: list[Key]) -> set[Key]:
    seen: set[Key] = set()
    todo = list(start)
    while todo:
        key = todo.pop()
        if key not in seen:
            seen.add(key)
            todo.extend(tree.needs.get(key, ()))
    return seen


def _order(key: Key) -> tuple[int, str]:
    return KIND_ORDER.index(key[0]), key[1]


def _as_requirements(direct: dict[Key, str]) -> dict[Kind, dict[str, str]]:
    found: dict[Kind, dict[str, str]] = {}
    for kind, slug in sorted(direct, key=_order):
        found.setdefault(kind, {})[slug] = f"^{direct[(kind, slug)]}"
    return found


# -- the lockfile ---------------------------------------------------------------------------------------

def _read_lock(path: Path, base: Path | None) -> tuple[dict[Key, str], set[Key]]:
    """({(kind, slug): version} of the direct installs, every (kind, slug) the lockfile lists)."""
    if base is not None:
        _refuse_escape(path, base)
    if not path.is_file():
        raise UsageError(f"{path}: no strawhub lockfile there", hint="give its path with --from-lock FILE")
    try:
        data = json.loads(_read_bounded(path, _MAX_LOCK_BYTES))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a strawhub JSON lockfile: {exc}") from None
    entries = data.get("directInstalls") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f"{path}: not a strawhub JSON lockfile (no \"directInstalls\" list)")
    direct = {}
    for index, entry in enumerate(entries):
        kind, slug, version = _lock_entry(entry, f"{path}: directInstalls[{index}]")
        direct[(kind, slug)] = version
    listed = set(direct)
    packages = data.get("packages")
    for name, entry in (packages.items() if isinstance(packages, dict) else ()):
        kind, slug, _ = _lock_entry(entry, f"{path}: packages[{json.dumps(str(name)[:60])}]")
        listed.add((kind, slug))
    return direct, listed


def _lock_entry(entry: Any, where: str) -> tuple[Kind, str, str]:
    from strawpot.model.package import slug_error

    if not isinstance(entry, dict):
        raise UsageError(f"{where} is not an object")
    try:
        kind = Kind.parse(str(entry.get("kind")))
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    slug = entry.get("slug")
    if not isinstance(slug, str) or (err := slug_error(slug)):
        raise UsageError(f"{where}: {err if isinstance(slug, str) else 'slug is not a string'}")
    return kind, slug, _checked_version(entry.get("version"), where)


def _checked_version(version: Any, where: str) -> str:
    from resolver import InvalidVersion, Version

    try:
        Version.parse(str(version))
    except InvalidVersion:
        raise UsageError(f"{where}: version {str(version)[:40]!r} is not a version") from None
    return str(version)


# -- the install tree -----------------------------------------------------------------------------------

def _read_tree(root: Path, base: Path) -> _Tree:
    from strawpot.model.package import slug_error

    tree = _Tree()
    for kind in KIND_ORDER:
        folder = root / kind.plural
        if not (folder.is_dir() or folder.is_symlink()):
            continue
        _refuse_escape(folder, base)
        for entry in sorted(folder.iterdir()):
            if entry.name.startswith("."):  # strawhub's and strawpot's own work folders
                continue
            if not (entry.is_dir() or entry.is_symlink()):
                continue  # a stray file is no package
            if err := slug_error(entry.name):  # before the name is printed anywhere: it may hold escapes
                raise UsageError(f"{folder}: {err}", hint="remove that folder, or init from the lockfile alone")
            _refuse_escape(entry, base)
            if not entry.is_dir():
                continue
            version, needs = _read_package(kind, entry, base)
            tree.versions[(kind, entry.name)] = version
            tree.needs[(kind, entry.name)] = needs
    return tree


def _read_package(kind: Kind, folder: Path, base: Path) -> tuple[str, set[Key]]:
    """A package folder's version (`.version`, else its frontmatter's) and the packages it depends on."""
    from strawpot.model.dependencies import read_edges, v1_groups
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.installed import VERSION_FILE

    main = folder / kind.main_file
    _refuse_escape(main, base)
    if not main.is_file():
        raise UsageError(f"{folder}: no {kind.main_file} in this {kind.value} folder",
                         hint="remove that folder, or init from the lockfile alone")
    try:
        meta, _ = split_frontmatter(_read_bounded(main, _MAX_MAIN_BYTES).decode("utf-8"))
    except (FrontmatterError, UnicodeDecodeError) as exc:
        raise UsageError(f"{main}: {exc}") from None
    marker = folder / VERSION_FILE
    _refuse_escape(marker, base)
    if marker.is_file():
        version: Any = _read_bounded(marker, _MAX_VERSION_BYTES).decode("utf-8", "replace").strip()
        where = str(marker)
    else:
        version, where = meta.get("version"), f"{main}: frontmatter"
    checked = _checked_version(version, where)
    declared = _dig(meta, "metadata", "strawpot", "dependencies")
    edges = read_edges(kind, v1_groups(kind, declared))
    return checked, {(edge.kind, edge.name) for edge in edges.edges}


def _dig(meta: Any, *keys: str) -> Any:
    for key in keys:
        meta = meta.get(key) if isinstance(meta, dict) else None
    return meta


def _read_bounded(path: Path, limit: int) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UsageError(f"{path}: more than {limit} bytes, too large for what it should hold")
    return data


def _refuse_escape(path: Path, base: Path) -> None:
    from strawpot.model.display import short_repr
    from strawpot.model.layout import leads_out

    if leads_out(path, base):
        raise UsageError(f"{path} is a link to {short_repr(os.path.realpath(path))}, outside {base}",
                         hint="strawhub never makes links; remove it, or init from the lockfile alone")
