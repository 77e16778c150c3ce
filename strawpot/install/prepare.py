"""Prepare: download what a plan installs into the cache and verify every byte against the lock, in memory.

Nothing is written to the project here: an archive whose sha256, members or per-file hashes differ
from the lock, or that holds a link, a device or an unsafe path, fails the whole operation first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from strawpot.install.local import is_path_source, read_path_source
from strawpot.model.archive import ArchiveError, read_archive
from strawpot.model.errors import IntegrityFailure
from strawpot.model.lockfile import LockedPackage
from strawpot.model.paths import UnsafePath, safe_relative_path
from strawpot.model.tree_facts import RECORD_FILE, VERSION_FILE
from valueclass import Record

if TYPE_CHECKING:
    from hub_client import HubClient


# Written beside a package's files by strawpot itself; a package (or a registry) must never supply them.
_RESERVED = frozenset({VERSION_FILE, RECORD_FILE})


class Prepared(Record):
    """A package's verified files: {path: (bytes, executable)}."""

    package: LockedPackage
    files: dict[str, tuple[bytes, bool]]


def prepare(
    client: HubClient,
    packages: Iterable[LockedPackage],
    *,
    fetched: Mapping[tuple[str, str], dict[str, bytes]] | None = None,
    progress: Callable[[LockedPackage], None] | None = None,
    project_dir: Path | None = None,
) -> list[Prepared]:
    """Every package's files, downloaded concurrently and checked against the lock; a path source's files are
    read from its folder under `project_dir` and checked the same way (a change since locking is refused)."""
    from hub_client import HubError

    wanted = list(packages)
    assert client.cache is not None
    cache = client.cache
    done: dict[tuple[str, str], Prepared] = {}
    cached: dict[tuple[str, str], bytes] = {}
    missing: dict[tuple[str, str, str, str, int | None], LockedPackage] = {}
    for pkg in wanted:
        if not pkg.archive_sha256:
            continue
        data = cache.read_archive(pkg.archive_sha256)  # verified in memory; a corrupted entry is a miss
        if data is None:
            missing[_item(pkg)] = pkg
        else:
            cache.report_hit(pkg.archive_sha256, f"archive of {pkg.kind.value} {pkg.name} {pkg.version}")
            cached[(pkg.kind.value, pkg.name)] = data
            if progress is not None:
                progress(pkg)

    def on_archive(item: tuple[str, str, str, str, int | None], result: object) -> None:
        if progress is not None and not isinstance(result, HubError):
            progress(missing[item])

    for result in client.fetch_archives(missing, on_archive).values():
        if isinstance(result, HubError):
            raise result
    for pkg in wanted:
        done[(pkg.kind.value, pkg.name)] = _verified(client, pkg, cached, fetched, project_dir)
        if progress is not None and not pkg.archive_sha256:
            progress(pkg)
    return [done[(p.kind.value, p.name)] for p in wanted]


def _verified(
    client: HubClient, pkg: LockedPackage, cached: Mapping[tuple[str, str], bytes],
    fetched: Mapping[tuple[str, str], dict[str, bytes]] | None, project_dir: Path | None,
) -> Prepared:
    """One package's files, from its folder, its archive or the registry's files, checked against the lock."""
    if is_path_source(pkg):
        assert project_dir is not None, "a path source needs the project's folder"
        return Prepared(pkg, _path_files(project_dir, pkg))
    if pkg.archive_sha256:
        return Prepared(pkg, _archive_files(client, pkg, cached.get((pkg.kind.value, pkg.name))))
    contents = (fetched or {}).get((f"{pkg.kind.value}:{pkg.name}", pkg.version))
    return Prepared(pkg, _loose_files(client, pkg, contents))


def _path_files(project_dir: Path, pkg: LockedPackage) -> dict[str, tuple[bytes, bool]]:
    """A path source's files as they are now, which must be what was locked."""
    files = read_path_source(project_dir, pkg)
    try:
        _check_against_lock(pkg, files, check_exec=True)
    except IntegrityFailure as exc:
        raise IntegrityFailure(
            f"{_what(pkg)} ({pkg.source}) changed since it was locked: {exc.message.split(': ', 1)[-1]}",
            hint="nothing was written; run `strawpot install` again to lock and stage what is there now",
        ) from None
    return files


def _item(pkg: LockedPackage) -> tuple[str, str, str, str, int | None]:
    return (pkg.kind.value, pkg.name, pkg.version, pkg.archive_sha256 or "", pkg.archive_size)


def _archive_files(client: HubClient, pkg: LockedPackage, data: bytes | None) -> dict[str, tuple[bytes, bool]]:
    """The archive's files, checked (its bytes re-hashed in memory; a corrupted entry is fetched again once)."""
    assert client.cache is not None and pkg.archive_sha256
    if data is None:
        data = client.cache.read_archive(pkg.archive_sha256)
    if data is None:  # changed on disk since it was fetched: the cache dropped it, fetch once more
        client.fetch_archive(*_item(pkg))
        data = client.cache.read_archive(pkg.archive_sha256)
    if data is None:
        raise IntegrityFailure(f"{_what(pkg)}: the cached archive keeps failing its sha256 check")
    try:
        members = read_archive(data)
        files = {m.path: (m.data, m.executable) for m in members}
        _check_against_lock(pkg, files, check_exec=True)
    except (ArchiveError, IntegrityFailure) as exc:
        client.cache.discard_archive(pkg.archive_sha256)  # nothing refused stays in the cache
        if isinstance(exc, IntegrityFailure):
            raise
        raise IntegrityFailure(
            f"refused the archive of {_what(pkg)}: {exc}", hint="nothing was written; report the package"
        ) from None
    return files


def _loose_files(
    client: HubClient, pkg: LockedPackage, contents: dict[str, bytes] | None
) -> dict[str, tuple[bytes, bool]]:
    """A registry without archives: fetch the files one by one and check what the lock knows of them."""
    paths = []
    for f in pkg.files:
        try:
            paths.append(safe_relative_path(f.path))
        except UnsafePath as exc:
            raise IntegrityFailure(f"{_what(pkg)}: the lock lists an unsafe path: {exc}") from None
    if contents is None:
        contents = client.fetch_files(pkg.kind.value, pkg.name, pkg.version, paths)
    execs = {f.path for f in pkg.files if f.executable}
    files = {path: (data, path in execs) for path, data in contents.items()}
    _check_against_lock(pkg, files, check_exec=False)
    return files


def _check_against_lock(pkg: LockedPackage, files: dict[str, tuple[bytes, bool]], *, check_exec: bool) -> None:
    problems: list[str] = [f"{path}: a file name strawpot reserves for its own bookkeeping"
                           for path in sorted(set(files) & _RESERVED)]
    expected = {f.path: f for f in pkg.files}
    for path in sorted(set(files) - set(expected)):
        problems.append(f"{path}: not in the lock")
    for path, locked in sorted(expected.items()):
        if path not in files:
            problems.append(f"{path}: missing from the download")
            continue
        data, executable = files[path]
        if len(data) != locked.size:
            problems.append(f"{path}: {len(data)} bytes, the lock says {locked.size}")
        elif hashlib.sha256(data).hexdigest() != locked.sha256:
            problems.append(f"{path}: sha256 differs from the lock")
        elif check_exec and executable != locked.executable:
            problems.append(f"{path}: executable bit differs from the lock")
    if problems:
        raise IntegrityFailure(
            f"{_what(pkg)} does not match strawpot.lock: " + "; ".join(problems),
            hint="nothing was written; if the lock is right, the registry served different files",
        )


def check_main_file(pkg: LockedPackage, data: bytes) -> None:
    """Refuse a package's main file, fetched on its own, unless it is the locked one."""
    locked = next((f for f in pkg.files if f.path == pkg.kind.main_file), None)
    if locked is None or len(data) != locked.size or hashlib.sha256(data).hexdigest() != locked.sha256:
        raise IntegrityFailure(
            f"{_what(pkg)} does not match strawpot.lock: {pkg.kind.main_file}: sha256 differs from the lock",
            hint="if the lock is right, the registry served different files",
        )


def _what(pkg: LockedPackage) -> str:
    return f"{pkg.kind.value} {pkg.name} {pkg.version}"
