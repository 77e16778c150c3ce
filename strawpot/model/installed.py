"""The installed tree `.strawpot/<kinds>/<slug>/` with its `.version` files, checked against a lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from strawpot.model.install_record import (
    InstallRecord,
    RecordUnreadable,
    check_output,
    file_sha256,
    load_record,
    script_sha256,
)
from strawpot.model.kinds import KIND_ORDER, Kind
from strawpot.model.lockfile import LockedPackage, Lockfile
from strawpot.model.tree_facts import RECORD_FILE, VERSION_MOST, unverified_dirs
from strawpot.model.tree_facts import VERSION_FILE as VERSION_FILE  # re-exported: the version file's name
from valueclass import Record


class Mismatch(Record):
    """One way the installed tree differs from the lock."""

    kind: Kind
    name: str
    path: str
    problem: str
    source: str = "lock"  # or "record": the package's install record (what its install script built)

    def __str__(self) -> str:
        where = f"{self.kind.value} {self.name}" + (f": {self.path}" if self.path else "")
        return f"{where}: {self.problem}"


class InstalledPackage(Record):
    """A package folder found in the installed tree, with the version its main file states."""

    kind: Kind
    name: str
    version: str | None
    path: Path


class InstalledTree:
    """A `.strawpot` folder (project-local or global)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def package_dir(self, kind: Kind, name: str) -> Path:
        return self.root / kind.plural / name

    def installed_version(self, kind: Kind, name: str) -> str | None:
        return _version_in(os.path.join(self.root, kind.plural, name))

    def packages(self) -> list[InstalledPackage]:
        """Every package folder present, in kind then name order."""
        return [InstalledPackage(kind, name, self.installed_version(kind, name), self.root / kind.plural / name)
                for kind, name in self.folders()]

    def folders(self) -> list[tuple[Kind, str]]:
        """The kind and name of every package folder present, in kind then name order."""
        found = []
        for kind in KIND_ORDER:
            try:
                entries = sorted(os.scandir(os.path.join(self.root, kind.plural)), key=lambda e: e.name)
            except PermissionError:
                raise
            except OSError:
                continue  # missing, not a folder, a link to itself: no package there
            found += [(kind, entry.name) for entry in entries  # the types come with the names
                      if entry.is_dir() and not entry.name.startswith(".")]
        return found

    def verify(self, lock: Lockfile, *, deep: bool = True, extra: bool = True) -> list[Mismatch]:
        """Every difference between the tree and the lock; `deep` hashes files, else size only."""
        problems: list[Mismatch] = []
        for pkg in lock.packages:
            problems += self.verify_package(pkg, deep=deep)
        if extra:
            locked = {p.key for p in lock.packages}
            problems += [Mismatch(kind, name, "", "installed but not in the lock")
                         for kind, name in self.folders() if (kind, name) not in locked]
        return problems

    def tool_mismatches(self, lock: Lockfile) -> list[Mismatch]:
        """Where strawpot.lock's tools (names and install commands) differ from what each installed agent's own
        AGENT.md declares: a lock edited by hand must not smuggle in a command the package never gave."""
        from strawpot.model.fs import as_text, read_regular_file
        from strawpot.model.package_limits import MAX_FILE_SIZE
        from strawpot.model.yaml_scan import may_spell

        problems = []
        for pkg in lock.packages:
            data, _, unreadable = read_regular_file(os.path.join(self.root, pkg.kind.plural, pkg.name, pkg.kind.main_file),
                                                    MAX_FILE_SIZE)
            if unreadable or (not pkg.tools and not may_spell(data, b"tools")):
                continue  # missing, a link, a FIFO, too big (the file check reports it); or declaring no tool
            from strawpot.model.frontmatter import FrontmatterError, split_frontmatter

            try:
                meta, _body = split_frontmatter(as_text(data))
            except (UnicodeDecodeError, FrontmatterError):
                continue  # damaged: the file check reports it
            from strawpot.model.package_fields import tool_specs

            own = tool_specs(meta)
            locked = {t.name: dict(t.install) for t in pkg.tools}
            for name in sorted(set(own) | set(locked)):
                if name not in own:
                    problem = f"strawpot.lock lists tool {name!r}, which {pkg.kind.main_file} does not declare"
                elif name not in locked:
                    problem = f"{pkg.kind.main_file} declares tool {name!r}, which strawpot.lock does not list"
                elif own[name] != locked[name]:
                    problem = f"the install command of tool {name!r} in strawpot.lock differs from {pkg.kind.main_file}"
                else:
                    continue
                problems.append(Mismatch(pkg.kind, pkg.name, pkg.kind.main_file, problem))
        return problems

    def verify_package(self, pkg: LockedPackage, *, deep: bool = True) -> list[Mismatch]:
        folder = os.path.join(self.root, pkg.kind.plural, pkg.name)  # text: Path's joins were half of the time
        version = _version_in(folder)
        if version is None:
            return [Mismatch(pkg.kind, pkg.name, "", f"not installed (lock has {pkg.version})")]
        if version != pkg.version:
            return [Mismatch(pkg.kind, pkg.name, "", f"version {version} installed, lock has {pkg.version}")]
        record, problems = self._record(pkg, folder, deep=deep)
        built = record.paths | set(record.removed) if record else frozenset()
        for f in pkg.files:
            if f.path in built:
                continue  # changed or removed by the install script: the record says what it must be
            problem = _check_file(os.path.join(folder, f.path), f.size, f.sha256, f.executable, deep=deep)
            if problem:
                problems.append(Mismatch(pkg.kind, pkg.name, f.path, problem))
        expected = {f.path for f in pkg.files} | {VERSION_FILE, RECORD_FILE} | built
        for path in _walk(folder, unverified_dirs(pkg.kind.plural)):
            if path not in expected:
                where = "the lock nor the install record" if record else "the lock"
                problems.append(Mismatch(pkg.kind, pkg.name, path, f"file not in {where}"))
        return problems

    def record(self, kind: Kind, name: str) -> InstallRecord | None:
        """The install record of an installed package (None: never built, or damaged)."""
        try:
            return load_record(os.path.join(self.root, kind.plural, name))
        except RecordUnreadable:
            return None

    def _record(self, pkg: LockedPackage, folder: str, *, deep: bool) -> tuple[InstallRecord | None, list[Mismatch]]:
        """The package's install record and how the files it lists differ from it."""
        try:
            record = load_record(folder)
        except RecordUnreadable as exc:
            return None, [Mismatch(pkg.kind, pkg.name, RECORD_FILE, str(exc), "record")]
        if record is None:
            return None, []
        base = Path(folder)
        problems = [
            Mismatch(pkg.kind, pkg.name, out.path, problem, "record")
            for out in record.outputs if (problem := check_output(base / out.path, out, deep=deep))
        ]
        if deep and not problems and record.script_sha256 != _locked_script_sha256(pkg, base, record.os):
            problems.append(Mismatch(pkg.kind, pkg.name, RECORD_FILE,
                                     "was written by another install script than the package holds", "record"))
        return record, problems


def _locked_script_sha256(pkg: LockedPackage, base: Path, os_name: str) -> str | None:
    """The sha256 of the install script in the package's main file (already checked against the lock)."""
    from strawpot.model.frontmatter import FrontmatterError, split_frontmatter
    from strawpot.model.fs import as_text, read_regular_file
    from strawpot.model.package import install_commands
    from strawpot.model.package_limits import MAX_FILE_SIZE

    data, _, unreadable = read_regular_file(base / pkg.kind.main_file, MAX_FILE_SIZE)  # the tree is not trusted
    if unreadable:
        return None
    try:
        meta, _body = split_frontmatter(as_text(data))
    except (UnicodeDecodeError, FrontmatterError):
        return None
    script = install_commands(meta).get(os_name)
    return script_sha256(script) if script is not None else None


def _version_in(folder: str) -> str | None:
    """The version a package folder's `.version` file states (None: missing, a folder, a link, a FIFO, unreadable,
    empty: not a usable install). Read without following or blocking: the tree is an agent's to write."""
    from strawpot.model.fs import read_regular_file

    raw, _, why = read_regular_file(os.path.join(folder, VERSION_FILE), VERSION_MOST)
    try:
        return None if why else raw.decode("utf-8").strip() or None
    except UnicodeDecodeError:
        return None


def _check_file(path: str, size: int, sha256: str, executable: bool, *, deep: bool) -> str | None:
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
    try:
        if deep and file_sha256(path) != sha256:
            return "content differs from the lock (sha256)"
    except OSError as exc:  # replaced since the lstat
        return f"cannot be read ({exc.strerror or exc})"
    return None


def _walk(base: str, skip: frozenset[str]) -> list[str]:
    """Every file under `base` (as a relative POSIX path) but those in its top-level folders `skip` (an
    integration's `.venv`)."""
    found: list[str] = []
    folders = [(base, "")]
    while folders:  # a stack, not recursion: an agent can nest folders deeper than Python recurses
        folder, prefix = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: passed over, as os.walk does
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                found.append(prefix + entry.name)
            elif not entry.is_symlink() and (prefix or entry.name not in skip):  # a link to a folder: not entered
                folders.append((entry.path, f"{prefix}{entry.name}/"))
    return found
