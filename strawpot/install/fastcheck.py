"""The no-op check of a bare `strawpot install`: lock current and tree equal to it, with stdlib imports only.

It must stay cheap (no tomlkit, httpx, rich or resolver), so it recomputes the manifest's dependency
hash from `tomllib`; a test keeps it equal to `Manifest.dependency_hash`. Any doubt returns None and
the full path decides.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any

from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.lockfile import Lockfile


def manifest_hash(path: Path) -> str | None:
    """`Manifest.dependency_hash()` of the file at `path`, or None if it cannot be read simply."""
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        return None
    rows: list[list[Any]] = []
    for kind in KIND_ORDER:
        section = data.get(kind.plural)
        if section is None:
            continue
        if not isinstance(section, dict):
            return None
        for name, value in section.items():
            if isinstance(value, str):
                spec, agent = value.strip() or "*", None
            elif isinstance(value, dict) and isinstance(value.get("version", "*"), str):
                spec, agent = value.get("version", "*").strip() or "*", value.get("default_agent")
            else:
                return None
            rows.append([kind.value, str(name), spec, agent if kind is Kind.ROLE else None])
    rows.sort(key=lambda row: (row[0], row[1]))
    return "sha256:" + hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def up_to_date(manifest_path: Path, lock_path: Path, tree_root: Path, *, frozen: bool = False) -> Lockfile | None:
    """The lock, if it matches the manifest (unless `frozen`) and the tree matches it; else None."""
    try:
        lock = Lockfile.load(lock_path)
    except Exception:  # noqa: BLE001 - any problem is for the full path to report
        return None
    if not frozen and manifest_hash(manifest_path) != lock.manifest_hash:
        return None
    tree = InstalledTree(tree_root)
    if _leftovers(tree_root):
        return None  # a killed run left temp or old dirs: the full path recovers them
    for pkg in lock.packages:
        if tree.verify_package(pkg, deep=False):
            return None
    return lock


def _leftovers(tree_root: Path) -> bool:
    for kind in KIND_ORDER:
        try:
            names = os.listdir(tree_root / kind.plural)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if any(name.startswith((".tmp-", ".old-", ".del-")) for name in names):
            return True
    return False


def project_paths(project: Path | None, is_global: bool) -> tuple[Path, Path, Path]:
    """(manifest, lock, tree root) as `strawpot.settings.Project` places them, without importing it."""
    if is_global:
        root = Path(os.environ.get("STRAWPOT_HOME") or Path.home() / ".strawpot")
        return root / "strawpot.toml", root / "strawpot.lock", root
    folder = (project or Path.cwd()).resolve()
    return folder / "strawpot.toml", folder / "strawpot.lock", folder / ".strawpot"


def noop_install(project: Path | None, is_global: bool, *, frozen: bool, skip_tools: bool) -> bool:
    """True (after saying so on stderr) when a bare install has nothing to do."""
    import sys
    import time

    started = time.perf_counter()
    manifest, lock_path, tree_root = project_paths(project, is_global)
    lock = up_to_date(manifest, lock_path, tree_root, frozen=frozen)
    if lock is None:
        return False
    if not skip_tools:
        from strawpot.install.tools import missing_tools

        if missing_tools(lock):
            return False  # the full path reports them
    elapsed = time.perf_counter() - started
    sys.stderr.write(f"Already up to date ({len(lock.packages)} packages) in {elapsed:.2f}s\n")
    return True
