"""Apply: assemble each package in a temp dir beside its target, then swap it in with renames.

A kill at any moment leaves each package wholly old or wholly new: on Linux the swap is one
`renameat2(RENAME_EXCHANGE)`; elsewhere the old dir is renamed aside first and `recover` (run at the
start of every operation, under the project's file lock) puts it back if the new one never arrived.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from strawpot.install.options import Faults
from strawpot.install.prepare import Prepared
from strawpot.model.installed import InstalledTree
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.tree_facts import DEL_PREFIX, OLD_PREFIX, TMP_PREFIX, VERSION_FILE
from valueclass import Record

_WRITERS = 4  # threads writing staged packages


class Staged(Record):
    kind: Kind
    name: str
    tmp: Path
    target: Path


def stage(tree: InstalledTree, prepared: list[Prepared], faults: Faults) -> list[Staged]:
    """Write every package into its own temp dir (nothing visible changes yet).

    Packages are written on a few threads: creating files is kernel work that runs with the GIL released,
    so two to four writers make 100 packages about 1.8x faster on two cores.
    """
    staged: list[Staged] = []
    parents: set[Path] = set()
    for item in prepared:
        pkg = item.package
        target = tree.package_dir(pkg.kind, pkg.name)
        tmp = target.parent / f"{TMP_PREFIX}{pkg.name}-{secrets.token_hex(4)}"
        staged.append(Staged(pkg.kind, pkg.name, tmp, target))
        parents.add(target.parent)
    try:
        for parent in parents:
            parent.mkdir(parents=True, exist_ok=True)
        if len(prepared) < 2:
            for item, place in zip(prepared, staged, strict=True):
                _write_package(place.tmp, item)
        else:
            with ThreadPoolExecutor(max_workers=_WRITERS, thread_name_prefix="stage") as pool:
                futures = [pool.submit(_write_package, place.tmp, item) for item, place in zip(prepared, staged,
                                                                                             strict=True)]
                try:
                    for future in futures:
                        future.result()
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        for _ in staged:
            faults.checkpoint()
    except BaseException:
        discard(staged)
        raise
    return staged


def _write_package(tmp: Path, item: Prepared) -> None:
    tmp.mkdir()
    _write_files(tmp, item.files)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp / VERSION_FILE, flags, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(f"{item.package.version}\n".encode())


def _write_files(root: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    """Write into a fresh dir that only we create folders in; paths were checked by read_archive or
    safe_relative_path (relative, no `..`), and O_EXCL|O_NOFOLLOW refuses anything already there."""
    made: set[str] = set()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for path, (data, executable) in sorted(files.items()):
        if path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"refusing to write outside the package folder: {path!r}")
        folder = path.rpartition("/")[0]
        if folder and folder not in made:
            (root / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        fd = os.open(root / path, flags, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), 0o755 if executable else 0o644)


def discard(staged: list[Staged]) -> None:
    for item in staged:
        shutil.rmtree(item.tmp, ignore_errors=True)


def commit(staged: list[Staged], faults: Faults) -> None:
    """Swap each staged package into place; the previous version is deleted after the swap."""
    for item in staged:
        if item.target.exists() and not faults.no_exchange and _exchange(item.tmp, item.target):
            faults.checkpoint()
            shutil.rmtree(item.tmp, ignore_errors=True)  # now holds the old version
        else:
            _replace_by_renames(item.tmp, item.target, faults)
        faults.checkpoint()


def _replace_by_renames(new: Path, target: Path, faults: Faults) -> None:
    old = None
    if target.exists():
        old = target.parent / f"{OLD_PREFIX}{target.name}-{secrets.token_hex(4)}"
        os.rename(target, old)
        faults.checkpoint()
    os.rename(new, target)
    if old is not None:
        faults.checkpoint()
        shutil.rmtree(old, ignore_errors=True)


def remove(tree: InstalledTree, packages: list[tuple[Kind, str]], faults: Faults) -> None:
    """Remove packages: renamed aside in one step (so never half-deleted), then deleted."""
    for kind, name in packages:
        target = tree.package_dir(kind, name)
        if not target.exists():
            continue
        old = target.parent / f"{DEL_PREFIX}{name}-{secrets.token_hex(4)}"
        os.rename(target, old)
        faults.checkpoint()
        shutil.rmtree(old, ignore_errors=True)


def recover(tree: InstalledTree) -> None:
    """Finish what a killed run left: drop temp dirs, put back an old dir whose replacement never arrived."""
    for kind in KIND_ORDER:
        kind_dir = tree.root / kind.plural
        if not kind_dir.is_dir():
            continue
        for entry in sorted(kind_dir.iterdir()):
            if entry.name.startswith((TMP_PREFIX, DEL_PREFIX)):
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.name.startswith(OLD_PREFIX):
                name = entry.name[len(OLD_PREFIX):].rsplit("-", 1)[0]
                target = kind_dir / name
                if not target.exists():
                    os.rename(entry, target)
                else:
                    shutil.rmtree(entry, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths (Linux renameat2); False when the platform cannot."""
    if sys.platform != "linux":
        return False
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))

