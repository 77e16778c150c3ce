"""The installed tree's file names and format versions, and the manifest's dependency hash (stdlib only).

One definition each, imported by `Manifest`, the install pipeline (apply, install records) and the early
"nothing to do" answer of `strawpot.install.fastcheck`, which runs before click, tomlkit or the resolver
are imported: so this module imports nothing heavy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.path_source import path_row, workspace_rows
from strawpot.model.sha import sha256

TYPE_CHECKING = False  # typing is not imported on the read-only commands' path
if TYPE_CHECKING:
    from typing import Any

VERSION_FILE = ".version"  # in each installed package folder: the locked version it holds
VERSION_MOST = 4096  # bytes of a `.version` every reader takes (a version is a few dozen): larger is not an install
RECORD_FILE = ".install-record.json"  # beside a built package: what its install script made (install_record)
RECORD_FORMAT = 1
INDEX_NAME = ".install-index.json"  # in the tree root: the lock as JSON, for the early answer (fastcheck)
INDEX_FORMAT = 2

# An integration's virtual environment, made by strawpot in its package folder before its install command runs
# (`pip install` goes there, never into the user's Python). Not part of the verified tree: pip writes thousands of
# files no lock or record can list, and Python adds `__pycache__` to it each time the integration runs; the
# package's own files, and what its install command writes outside `.venv/`, are verified as for any package.
VENV_DIR = ".venv"


def venv_bin(package_dir: Path) -> Path:
    """The bin folder of a package folder's `.venv` (its `python` and `pip`), first on PATH for an integration's
    install command and its entry point."""
    return package_dir / VENV_DIR / "bin"


def unverified_dirs(plural: str) -> frozenset[str]:
    """The top-level folders of a package folder of kind `plural` that verification does not walk."""
    return frozenset({VENV_DIR}) if plural == "integrations" else frozenset()


# temp and aside folders beside the package folders during an apply; `recover` clears what a killed run left
TMP_PREFIX = ".tmp-"
OLD_PREFIX = ".old-"
DEL_PREFIX = ".del-"
LEFTOVER_PREFIXES = (TMP_PREFIX, OLD_PREFIX, DEL_PREFIX)


class Unhashable(ValueError):
    """The manifest holds something the hash cannot read; the manifest reader says what, in its own words."""


class MissingPathSource(Unhashable):
    """A `{ path = ... }` requirement names a folder that does not exist."""

    def __init__(self, kind: Kind, name: str, path: str) -> None:
        super().__init__(f"{kind.plural}.{name}: path {path!r} is not a folder")
        self.kind, self.name, self.path = kind, name, path


def dependency_hash(folder: Path, data: Mapping[str, Any]) -> str:
    """A hash of everything resolution reads from the manifest `data` (plain values, as `tomllib` gives them)
    in `folder`, to detect a stale lock: the requirements, and the files of every path source and workspace
    member (`strawpot.model.path_source`). Raises `Unhashable` on a shape the manifest reader refuses."""
    from strawpot.model.project_tables import mistyped_table

    if (found := mistyped_table(data)) is not None:
        raise Unhashable(found.message())
    rows: list[list[Any]] = []
    for kind in KIND_ORDER:
        section = data.get(kind.plural)
        if section is None:
            continue
        if not isinstance(section, dict):
            raise Unhashable(f"[{kind.plural}] is not a table")
        for name, value in section.items():
            row = _row(kind, str(name), value, folder)
            if row:
                rows.append(row)
    rows.sort(key=lambda row: (row[0], row[1]))
    rows += workspace_rows(folder, dict(data)) or []  # a malformed [workspace] is for the workspace reader
    return "sha256:" + sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def reads_files(data: Mapping[str, Any]) -> bool:
    """Whether `dependency_hash` of the manifest `data` reads files beside it (a path source, a `[workspace]`): when
    it does not, the manifest's bytes alone decide the hash."""
    if data.get("workspace") is not None:
        return True
    return any(isinstance(value, dict) and "path" in value
               for kind in KIND_ORDER if isinstance(section := data.get(kind.plural), dict)
               for value in section.values())


def _row(kind: Kind, name: str, value: Any, folder: Path) -> list[Any]:
    """One requirement's row of the hash; [] for `[agents.<name>]` settings, which are no requirement."""
    if isinstance(value, str):
        return [kind.value, name, value.strip() or "*", None]
    if not (isinstance(value, dict) and isinstance(value.get("version", "*"), str)):
        raise Unhashable(f"{kind.plural}.{name} is neither a specifier nor a table with a string version")
    from strawpot.model.project_tables import unknown_requirement_key

    if problem := unknown_requirement_key(kind, name, value):
        raise Unhashable(problem)
    where = value.get("path")
    if kind is Kind.AGENT and "version" not in value and where is None:
        return []
    agent = value.get("default_agent") if kind is Kind.ROLE else None
    row = [kind.value, name, value.get("version", "*").strip() or "*", agent]
    if where is None:
        return row
    if not (isinstance(where, str) and where.strip()):
        raise Unhashable(f"{kind.plural}.{name}.path is not a folder name")
    extra = path_row(folder, where)
    if extra is None:
        raise MissingPathSource(kind, name, where)
    return row + extra
