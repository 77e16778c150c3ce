"""The no-op check of a bare `strawpot install`: lock current and tree equal to it, with stdlib imports only.

It must stay cheap (no tomlkit, httpx, rich or resolver, not even the TOML lock parser): the full path
leaves `.strawpot/.install-index.json`, the lock's package and file list as JSON keyed by the sha256 of
the lock's bytes, so a no-op reads one small JSON file and stats the tree. Without a matching index it
parses the lock. The manifest's dependency hash is recomputed from `tomllib`; a test keeps it equal to
`Manifest.dependency_hash`. Any doubt returns False and the full path decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.path_source import path_row, workspace_rows
from strawpot.model.plural import count

if TYPE_CHECKING:
    from strawpot.model.lockfile import Lockfile

INDEX_NAME = ".install-index.json"
INDEX_FORMAT = 2
_LEFTOVER_PREFIXES = (".tmp-", ".old-", ".del-")
_RECORD_FILE = ".install-record.json"  # strawpot.model.install_record.RECORD_FILE (a test keeps them equal)

# one package of the index: [plural, name, version, [[path, size, executable], ...], [agent tool names],
# has an install script for this OS (True / False / None: not known without parsing the main file)]
Entry = list[Any]


def manifest_hash(path: Path) -> str | None:
    """`Manifest.dependency_hash()` of the file at `path`, or None if it cannot be read simply."""
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError, RecursionError):
        return None
    from strawpot.model.settings import mistyped_table

    if mistyped_table(data) is not None:
        return None  # the full path refuses it
    rows: list[list[Any]] = []
    for kind in KIND_ORDER:
        section = data.get(kind.plural)
        if section is None:
            continue
        if not isinstance(section, dict):
            return None
        for name, value in section.items():
            row = _row(kind, str(name), value, path.parent)
            if row is None:
                return None
            if row:
                rows.append(row)
    rows.sort(key=lambda row: (row[0], row[1]))
    members = workspace_rows(path.parent, data)
    if members is None:
        return None
    rows += members
    return "sha256:" + hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def _row(kind: Kind, name: str, value: Any, folder: Path) -> list[Any] | None:
    """One requirement's row of the hash; [] for `[agents.<name>]` settings; None when unsure."""
    if isinstance(value, str):
        return [kind.value, name, value.strip() or "*", None]
    if not (isinstance(value, dict) and isinstance(value.get("version", "*"), str)):
        return None
    where = value.get("path")
    if kind is Kind.AGENT and "version" not in value and where is None:
        return []  # settings only: not a requirement
    agent = value.get("default_agent") if kind is Kind.ROLE else None
    row = [kind.value, name, value.get("version", "*").strip() or "*", agent]
    if where is None:
        return row
    extra = path_row(folder, where) if isinstance(where, str) else None
    return None if extra is None else row + extra


# -- the index -----------------------------------------------------------------------------------------


def write_index(tree_root: Path, lock_path: Path, lock: Lockfile, scripted: set[tuple[str, str]]) -> None:
    """Record the lock as JSON for the next no-op check (best effort: a cache, never required);
    `scripted` holds the (plural, name) of packages with an install script for this OS."""
    from strawpot.model.fs import atomic_write

    try:
        digest = hashlib.sha256(lock_path.read_bytes()).hexdigest()
    except OSError:
        return
    payload = {
        "format": INDEX_FORMAT,
        "lock_sha256": digest,
        "manifest_hash": lock.manifest_hash,
        "packages": [
            [p.kind.plural, p.name, p.version, [[f.path, f.size, f.executable] for f in p.files],
             [t.name for t in p.tools] if p.kind is Kind.AGENT else [], (p.kind.plural, p.name) in scripted]
            for p in lock.packages
        ],
    }
    try:
        atomic_write(tree_root / INDEX_NAME, json.dumps(payload, separators=(",", ":")))
    except OSError:
        return


def _entries(lock_path: Path, tree_root: Path) -> tuple[str, list[Entry]] | None:
    """(manifest hash, packages) of the lock: from the index when it matches the lock's bytes."""
    try:
        raw = lock_path.read_bytes()
    except OSError:
        return None
    try:
        index = json.loads((tree_root / INDEX_NAME).read_bytes())
        if index.get("format") == INDEX_FORMAT and index.get("lock_sha256") == hashlib.sha256(raw).hexdigest():
            return str(index["manifest_hash"]), list(index["packages"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    from strawpot.model.lockfile import Lockfile

    try:
        lock = Lockfile.load(lock_path)
    except Exception:  # noqa: BLE001 - any problem is for the full path to report
        return None
    return lock.manifest_hash, [
        [p.kind.plural, p.name, p.version, [[f.path, f.size, f.executable] for f in p.files],
         [t.name for t in p.tools] if p.kind is Kind.AGENT else [],
         _may_have_script(tree_root / p.kind.plural / p.name / p.kind.main_file)]
        for p in lock.packages
    ]


def _may_have_script(main_file: Path) -> bool | None:
    """False when a main file cannot hold an install script (no YAML parser here); None: it may."""
    try:
        return None if b"install" in main_file.read_bytes() else False
    except OSError:
        return None


# -- the check -----------------------------------------------------------------------------------------


def up_to_date(manifest_path: Path, lock_path: Path, tree_root: Path, *, frozen: bool = False) -> list[Entry] | None:
    """The lock's packages, if the lock matches the manifest (unless `frozen`) and the tree matches the
    lock (`.version`, file sizes and executable bits, no extra files); else None."""
    found = _entries(lock_path, tree_root)
    if found is None:
        return None
    locked_hash, packages = found
    if not frozen and manifest_hash(manifest_path) != locked_hash:
        return None
    if _leftovers(tree_root):
        return None  # a killed run left temp or old dirs: the full path recovers them
    for plural, name, version, files, _tools, scripted in packages:
        if not _package_matches(tree_root / plural / name, version, files, scripted):
            return None
    return packages


def _package_matches(base: Path, version: str, files: list[list[Any]], scripted: bool | None) -> bool:
    """`.version`, the locked files and, for a built package, what its install record lists (sizes and bits)."""
    try:
        if (base / ".version").read_text(encoding="utf-8").strip() != version:
            return False
    except (OSError, UnicodeDecodeError):
        return False
    built = _built(base)
    if built is None or (built[2] is False and scripted is not False):
        return False  # a damaged record, or a script that has not run (or may not have): the full path decides
    outputs, removed, has_record = built
    expected = {path: (size, executable) for path, size, executable in files if path not in removed}
    expected.update(outputs)
    for path, (size, executable) in expected.items():
        try:
            st = os.lstat(base / path)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size != size or bool(st.st_mode & stat.S_IXUSR) != executable:
            return False
    # every expected file, .version and the record if any; anything more is an extra file
    return _count_files(base) == len(expected) + 1 + has_record


def _built(base: Path) -> tuple[dict[str, tuple[int, bool]], set[str], bool] | None:
    """(outputs, removed paths, True) of a package's install record; ({}, set(), False) without one;
    None if it cannot be used here."""
    try:
        data = json.loads((base / _RECORD_FILE).read_bytes())
    except FileNotFoundError:
        return {}, set(), False
    except (OSError, ValueError):
        return None
    try:
        if data["format"] != 1 or any(f.get("link") is not None for f in data["outputs"]):
            return None  # links are checked by the full path
        outputs = {str(f["path"]): (int(f["size"]), bool(f["executable"])) for f in data["outputs"]}
        return outputs, {str(p) for p in data.get("removed", [])}, True
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _count_files(folder: Path) -> int:
    count = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                count += _count_files(Path(entry.path))
            else:
                count += 1
    return count


def _leftovers(tree_root: Path) -> bool:
    for kind in KIND_ORDER:
        try:
            names = os.listdir(tree_root / kind.plural)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if any(name.startswith(_LEFTOVER_PREFIXES) for name in names):
            return True
    return False


def project_paths(project: Path | None, is_global: bool) -> tuple[Path, Path, Path]:
    """(manifest, lock, tree root) of the project, from the import-light layout module."""
    from strawpot.model.layout import Project

    where = Project.at(project, is_global=is_global)
    return where.manifest_path, where.lock_path, where.tree_root


def lock_current(project: Path | None, is_global: bool) -> int | None:
    """The number of locked packages if strawpot.lock matches strawpot.toml, else None."""
    manifest, lock_path, tree_root = project_paths(project, is_global)
    found = _entries(lock_path, tree_root)
    if found is None or manifest_hash(manifest) != found[0]:
        return None
    return len(found[1])


def noop_install(project: Path | None, is_global: bool, *, frozen: bool, skip_tools: bool, quiet: bool) -> bool:
    """True (after saying so on stderr, unless `quiet`) when a bare install has nothing to do."""
    import sys
    import time

    started = time.perf_counter()
    manifest, lock_path, tree_root = project_paths(project, is_global)
    packages = up_to_date(manifest, lock_path, tree_root, frozen=frozen)
    if packages is None:
        return False
    if not skip_tools:
        import shutil

        if any(shutil.which(tool) is None for _p, _n, _v, _f, tools, _s in packages for tool in tools):
            return False  # the full path reports them, with their install hints
    elapsed = time.perf_counter() - started
    if not quiet:
        sys.stderr.write(f"Already up to date ({count(len(packages), 'package')}) in {elapsed:.2f}s\n")
    return True
