"""The first step of every install-family run: is there nothing to do? Answered from the files, stdlib only.

`strawpot.install.service.run` asks `nothing_to_do` before anything else (for the runs
`Options.only_current` admits), and the entry point (`strawpot.cli`) asks the same function the same
question for a bare `strawpot install` before click, rich, tomlkit or httpx are imported. So it must stay
cheap (not even the TOML lock parser): the full path leaves `.strawpot/.install-index.json`, the lock's
package and file list as JSON keyed by the sha256 of the lock's bytes, so a no-op reads one small JSON
file and stats the tree; without a matching index it parses the lock. The index also names the manifest's bytes
(with this version) when they alone decide its hash and it matched the lock's, so a no-op need not parse the
manifest either (nor import `tomllib` or the settings schema). The manifest hash and the tree's
file names come from `strawpot.model.tree_facts`, as they do for `Manifest` and the pipeline. Any doubt
answers None and the rest of the pipeline decides.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from strawpot.model.fs import as_text, read_own_file
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.sha import sha256
from strawpot.model.tree_facts import (
    INDEX_FORMAT,
    INDEX_NAME,
    LEFTOVER_PREFIXES,
    RECORD_FILE,
    RECORD_FORMAT,
    VERSION_FILE,
    VERSION_MOST,
    Unhashable,
    dependency_hash,
    reads_files,
    unverified_dirs,
)

_TREE_FILE_MOST = 64 * 1024 * 1024  # bytes: more than the index, a record or a main file of any real tree

TYPE_CHECKING = False  # typing is not imported on the no-op path
if TYPE_CHECKING:
    from typing import Any

    from strawpot.install.options import Edit, Options
    from strawpot.model.layout import Project
    from strawpot.model.lockfile import Lockfile

    # one package of the index: [plural, name, version, [[path, size, executable], ...], [agent tool names],
    # has an install script for this OS (True / False / None: not known without parsing the main file)]
    Entry = list[Any]


def first_step(project: Project, edit: Edit | None, options: Options) -> int | None:
    """The plan's first step (`service.run` takes it before anything else): the number of locked packages when
    the run has nothing to do, answered from the files alone; else None. The entry point asks `nothing_to_do`
    the same question for a bare install, before click."""
    if not options.only_current(edit):
        return None
    return nothing_to_do(project, **options.current_question())


def _cooldown_in_play(project: Project) -> bool:
    """Whether `[install] min_release_age` is set anywhere or recorded in the lock: then only the settings layer
    can tell whether the lock was made with the value in force, and the full path decides."""
    if os.environ.get("STRAWPOT_INSTALL_MIN_RELEASE_AGE") is not None:
        return True
    from strawpot.model.folders import config_path_cheap

    seen = None
    try:
        index = json.loads(_tree_file(project.tree_root / INDEX_NAME))
        seen = (str(index["config"][0]), str(index["config"][1]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        pass
    for path, word in ((project.lock_path, b"min-release-age"), (project.manifest_path, b"min_release_age"),
                       (config_path_cheap(seen), b"min_release_age")):
        try:
            if word in read_own_file(path):
                return True
        except OSError:
            continue
    return False


def nothing_to_do(project: Project, *, frozen: bool = False, lock_only: bool = False,
                  check_tools: bool = True) -> int | None:
    """The number of locked packages when the lock matches strawpot.toml (unless `frozen`) and, unless
    `lock_only`, the tree matches the lock and (with `check_tools`) every agent's tools are on PATH; else
    None, and the rest of the pipeline decides. `Options.only_current` says which runs may ask."""
    if not frozen and _cooldown_in_play(project):
        return None
    if lock_only:
        found = _entries(project.lock_path, project.tree_root)
        if found is None or not _manifest_matches(project.manifest_path, found[0], found[2]):
            return None
        return len(found[1])
    packages = up_to_date(project.manifest_path, project.lock_path, project.tree_root, frozen=frozen)
    if packages is None:
        return None
    tools = [tool for _p, _n, _v, _f, needs, _s in packages for tool in needs] if check_tools else []
    if tools:
        import shutil  # only with tools to look for: 3-4 ms of a ~90 ms no-op

        if any(shutil.which(tool) is None for tool in tools):
            return None  # the full path reports them, with their install hints
    return len(packages)


def manifest_hash(path: Path) -> str | None:
    """`Manifest.dependency_hash()` of the file at `path` (the same function, over `tomllib`'s reading), or
    None if the manifest cannot be read or hashed (the full reader says why)."""
    found = _manifest(path)
    return found[0] if found is not None else None


def _manifest(path: Path) -> tuple[str, bytes, bool] | None:
    """(`manifest_hash`, the file's bytes (b"" when there is none), whether files beside it count in the hash)."""
    import tomllib

    try:
        raw = read_own_file(path)
    except FileNotFoundError:
        raw = b""
    except OSError:
        return None
    try:
        data: dict[str, Any] = tomllib.loads(as_text(raw))
        return dependency_hash(path.parent, data), raw, reads_files(data)
    except (ValueError, Unhashable, OSError, RecursionError):  # not UTF-8 or not TOML (ValueErrors), a bad shape
        return None


def _manifest_matches(path: Path, locked_hash: str, known: str | None) -> bool:
    """Whether the manifest at `path` hashes to the lock's `locked_hash`: at once when its bytes are the `known` ones
    (recorded by `write_index` for a manifest whose bytes decide its hash), else by hashing it."""
    if known:
        try:
            raw = read_own_file(path)
        except FileNotFoundError:
            raw = b""
        except OSError:
            raw = None
        if raw is not None and _manifest_key(raw) == known:
            return True
    return manifest_hash(path) == locked_hash


# -- the index -----------------------------------------------------------------------------------------


def write_index(tree_root: Path, project: Project, lock: Lockfile, scripted: set[tuple[str, str]]) -> None:
    """Record the lock as JSON for the next no-op check (best effort: a cache, never required);
    `scripted` holds the (plural, name) of packages with an install script for this OS. The manifest's bytes are
    named when they alone decide its hash and that hash is the lock's."""
    from strawpot.model.folders import config_path_seen
    from strawpot.model.fs import atomic_write

    try:
        digest = sha256(read_own_file(project.lock_path)).hexdigest()
    except OSError:
        return
    payload = {
        "format": INDEX_FORMAT,
        "lock_sha256": digest,
        "manifest_hash": lock.manifest_hash,
        "manifest_sha256": _known_manifest(project.manifest_path, lock.manifest_hash),
        "config": list(config_path_seen()),  # where the no-op check looks for [install] min_release_age
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


def _known_manifest(manifest_path: Path, locked_hash: str) -> str:
    """The manifest's key (`_manifest_key`) when its bytes alone decide its hash and it is `locked_hash`; else ""."""
    found = _manifest(manifest_path)
    if found is None or found[2] or found[0] != locked_hash:
        return ""
    return _manifest_key(found[1])


def _manifest_key(raw: bytes) -> str:
    """What the index names a manifest by: the sha256 of this strawpot's version and the manifest's bytes (an
    upgrade may hash the same bytes by other rules, so a key from an older version never matches)."""
    from strawpot import __version__

    return sha256(f"{__version__}\0".encode() + raw).hexdigest()


def _entries(lock_path: Path, tree_root: Path) -> tuple[str, list[Entry], str | None] | None:
    """(manifest hash, packages, the manifest bytes' sha256 known to give that hash, if any) of the lock: from the
    index when it matches the lock's bytes."""
    try:
        raw = read_own_file(lock_path)
    except OSError:
        return None
    try:
        index = json.loads(_tree_file(tree_root / INDEX_NAME))
        if index.get("format") == INDEX_FORMAT and index.get("lock_sha256") == sha256(raw).hexdigest():
            known = index.get("manifest_sha256")
            return str(index["manifest_hash"]), list(index["packages"]), known if isinstance(known, str) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    from strawpot.model.errors import UsageError
    from strawpot.model.lockfile import Lockfile

    try:
        lock = Lockfile.load(lock_path)
    except UsageError:  # the lock reader's refusal (LockfileError): the full path reports it
        return None
    return lock.manifest_hash, [
        [p.kind.plural, p.name, p.version, [[f.path, f.size, f.executable] for f in p.files],
         [t.name for t in p.tools] if p.kind is Kind.AGENT else [],
         _may_have_script(tree_root / p.kind.plural / p.name / p.kind.main_file)]
        for p in lock.packages
    ], None


def _tree_file(path: Path, most: int = _TREE_FILE_MOST) -> bytes:
    """A file of the installed tree, which an agent may have written: never through a link, never blocking on a
    FIFO, never more than any file strawpot writes there; OSError when it is not such a file (then the full path,
    which reads it the same way, decides)."""
    from strawpot.model.fs import read_regular_file

    data, found, why = read_regular_file(path, most)
    if why is None:
        return data
    if found is None and not os.path.lexists(path):
        raise FileNotFoundError(why)
    raise OSError(why)


def _may_have_script(main_file: Path) -> bool | None:
    """False when a main file cannot hold an install script (no YAML parser here); None: it may."""
    try:
        return None if b"install" in _tree_file(main_file) else False
    except OSError:
        return None


# -- the check -----------------------------------------------------------------------------------------


def up_to_date(manifest_path: Path, lock_path: Path, tree_root: Path, *, frozen: bool = False) -> list[Entry] | None:
    """The lock's packages, if the lock matches the manifest (unless `frozen`) and the tree matches the
    lock (`.version`, file sizes and executable bits, no extra files); else None."""
    found = _entries(lock_path, tree_root)
    if found is None:
        return None
    locked_hash, packages, known = found
    if not frozen and not _manifest_matches(manifest_path, locked_hash, known):
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
        if _tree_file(base / VERSION_FILE, VERSION_MOST).decode("utf-8").strip() != version:
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
    try:
        return _count_files(base, unverified_dirs(base.parent.name)) == len(expected) + 1 + has_record
    except OSError:
        return False


def _built(base: Path) -> tuple[dict[str, tuple[int, bool]], set[str], bool] | None:
    """(outputs, removed paths, True) of a package's install record; ({}, set(), False) without one;
    None if it cannot be used here."""
    try:
        data = json.loads(_tree_file(base / RECORD_FILE))
    except FileNotFoundError:
        return {}, set(), False
    except (OSError, ValueError):
        return None
    try:
        if data["format"] != RECORD_FORMAT or any(f.get("link") is not None for f in data["outputs"]):
            return None  # links are checked by the full path
        outputs = {str(f["path"]): (int(f["size"]), bool(f["executable"])) for f in data["outputs"]}
        return outputs, {str(p) for p in data.get("removed", [])}, True
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _count_files(folder: Path, skip: frozenset[str] = frozenset()) -> int:
    count = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name in skip:
                continue  # an integration's .venv (tree_facts.VENV_DIR), which verification does not walk
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
        except OSError:
            return True  # cannot tell: the full path looks
        if any(name.startswith(LEFTOVER_PREFIXES) for name in names):
            return True
    return False
