"""The installed tree `.strawpot/<kinds>/<slug>/` with its `.version` files, checked against a lock."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.lockfile import LockedPackage, Lockfile

VERSION_FILE = ".version"


@dataclass(frozen=True)
class Mismatch:
    """One way the installed tree differs from the lock."""

    kind: Kind
    name: str
    path: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.kind.value} {self.name}" + (f": {self.path}" if self.path else "")
        return f"{where}: {self.problem}"


@dataclass(frozen=True)
class InstalledPackage:
    kind: Kind
    name: str
    version: str | None
    path: Path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class InstalledTree:
    """A `.strawpot` folder (project-local or global)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def package_dir(self, kind: Kind, name: str) -> Path:
        return self.root / kind.plural / name

    def installed_version(self, kind: Kind, name: str) -> str | None:
        try:
            return (self.package_dir(kind, name) / VERSION_FILE).read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError):  # missing, a folder, unreadable: not a usable install
            return None

    def packages(self) -> list[InstalledPackage]:
        """Every package folder present, in kind then name order."""
        found = []
        for kind in KIND_ORDER:
            kind_dir = self.root / kind.plural
            if not kind_dir.is_dir():
                continue
            for entry in sorted(kind_dir.iterdir()):
                if entry.is_dir() and not entry.name.startswith("."):
                    found.append(InstalledPackage(kind, entry.name, self.installed_version(kind, entry.name), entry))
        return found

    def verify(self, lock: Lockfile, *, deep: bool = True, extra: bool = True) -> list[Mismatch]:
        """Every difference between the tree and the lock; `deep` hashes files, else size only."""
        problems: list[Mismatch] = []
        for pkg in lock.packages:
            problems += self.verify_package(pkg, deep=deep)
        if extra:
            locked = {p.key for p in lock.packages}
            for inst in self.packages():
                if (inst.kind, inst.name) not in locked:
                    problems.append(Mismatch(inst.kind, inst.name, "", "installed but not in the lock"))
        return problems

    def verify_package(self, pkg: LockedPackage, *, deep: bool = True) -> list[Mismatch]:
        base = self.package_dir(pkg.kind, pkg.name)
        version = self.installed_version(pkg.kind, pkg.name)
        if version is None:
            return [Mismatch(pkg.kind, pkg.name, "", f"not installed (lock has {pkg.version})")]
        if version != pkg.version:
            return [Mismatch(pkg.kind, pkg.name, "", f"version {version} installed, lock has {pkg.version}")]
        problems = []
        for f in pkg.files:
            problem = _check_file(base / f.path, f.size, f.sha256, f.executable, deep=deep)
            if problem:
                problems.append(Mismatch(pkg.kind, pkg.name, f.path, problem))
        expected = {f.path for f in pkg.files} | {VERSION_FILE}
        for path in _walk(base):
            if path not in expected:
                problems.append(Mismatch(pkg.kind, pkg.name, path, "file not in the lock"))
        return problems


def _check_file(path: Path, size: int, sha256: str, executable: bool, *, deep: bool) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size != size:
        return f"size {st.st_size}, lock has {size}"
    if bool(st.st_mode & stat.S_IXUSR) != executable:
        return "executable bit differs from the lock"
    if deep and file_sha256(path) != sha256:
        return "content differs from the lock (sha256)"
    return None


def _walk(base: Path) -> list[str]:
    found = []
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            found.append((Path(dirpath) / name).relative_to(base).as_posix())
    return found
