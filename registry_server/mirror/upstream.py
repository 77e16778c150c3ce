"""The registries a mirror stands in front of, spoken to through our own hub_client: a package's versions, and an
archive checked against the sha256 and size upstream's own metadata gives (and each file against its own)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

from hub_client import (
    Cache,
    HubClient,
    HubError,
    NotFound,
    RateLimited,
    RegistryUnreachable,
    ServerError,
    VersionInfo,
)
from registry_server.mirror.failures import UpstreamFailed
from registry_server.storage.base import FileEntry, VersionRecord
from strawpot.model.archive import ArchiveError, ArchiveMember, read_archive
from strawpot.model.kinds import Kind

DEFAULT_DEADLINE = 10.0  # seconds one request to upstream may take, retries and a slow drip included


def _failed(url: str, exc: HubError) -> UpstreamFailed:
    return UpstreamFailed(f"upstream {url}: {exc}",
                          refused=not isinstance(exc, RegistryUnreachable | ServerError | RateLimited))


def _record(url: str, kind: Kind, slug: str, info: VersionInfo) -> VersionRecord:
    if info.sha256 is None or info.size is None or any(f.sha256 is None for f in info.files):
        raise UpstreamFailed(f"upstream {url}: {kind.value} {slug} {info.version} comes without the sha256 of its "
                             "archive and files (a registry without the /versions extension cannot be mirrored)")
    return VersionRecord(
        version=info.version, changelog="", dependencies=info.dependencies,
        files=tuple(FileEntry(f.path, f.size, f.sha256 or "", f.executable) for f in info.files),
        archive_sha256=info.sha256, archive_size=info.size, created_at=info.created_at or 0,
        default_agent=info.default_agent, tools=info.tools, yanked=info.yanked,
        # upstream's statement and log index pass through, naming upstream's log, where clients check them
        statement=None if info.provenance is None else info.provenance.statement,
        signature=None if info.provenance is None else info.provenance.signature,
        key_id=None if info.provenance is None else info.provenance.key_id,
        log_index=info.log_index, log=None if info.log_index is None else info.log or url,
    )


def check_files(url: str, what: str, record: VersionRecord, members: list[ArchiveMember]) -> None:
    """Each file upstream's metadata names is in the archive with the same bytes (raises UpstreamFailed)."""
    held = {m.path: m for m in members}
    for entry in record.files:
        member = held.get(entry.path)
        if member is None or member.sha256 != entry.sha256 or len(member.data) != entry.size:
            raise UpstreamFailed(f"upstream {url}: the archive of {what} does not hold {entry.path!r} as its metadata "
                                 "says (sha256 and size); refused, nothing cached")


class Upstream:
    """One or more registries, asked in order: the first that has a package serves all of it.

    `headers` gives the headers of each request (the hop list that stops a loop), read in the calling thread.
    """

    def __init__(self, urls: list[str], fetch_dir: Path, *, deadline: float = DEFAULT_DEADLINE,
                 headers: Callable[[], Mapping[str, str]] | None = None) -> None:
        self.urls = [u.rstrip("/") for u in urls]
        self.clients = [
            HubClient(url, cache=Cache(fetch_dir / str(i)), request_deadline=deadline, timeout=deadline, retries=1,
                      max_workers=8, user_agent="strawpot-mirror", extra_headers=headers)
            for i, url in enumerate(self.urls)
        ]

    def describe(self) -> str:
        return ", ".join(self.urls)

    def versions(self, kind: Kind, slug: str) -> tuple[str, list[VersionRecord]] | None:
        """(the upstream's URL, every version it has) from the first upstream that has the package; None if none has
        it. Raises UpstreamFailed when one asked before that could not answer (a later one is never asked then: it
        could serve another package under the same name)."""
        for url, client in zip(self.urls, self.clients, strict=True):
            try:
                found = client.package_versions(kind.value, slug)
            except NotFound:
                continue
            except HubError as exc:
                raise _failed(url, exc) from None
            except ValueError as exc:  # a slug our own grammar refuses
                raise UpstreamFailed(f"upstream {url}: {exc}") from None
            if not found.has_archives:
                raise UpstreamFailed(f"upstream {url} has no /versions extension: a mirror needs the sha256 of "
                                     "every archive")
            return url, [_record(url, kind, slug, info) for info in found.versions]
        return None

    def archive(self, url: str, kind: Kind, slug: str, record: VersionRecord) -> tuple[bytes, list[ArchiveMember]]:
        """The archive's bytes and members, checked: its sha256 and size are the metadata's, each file too."""
        client = self.clients[self.urls.index(url)] if url in self.urls else None
        what = f"{kind.value} {slug} {record.version}"
        if client is None:
            raise UpstreamFailed(f"upstream {url} is no longer configured; cannot fetch {what}")
        cache = client.cache
        assert cache is not None
        try:
            path = client.fetch_archive(kind.value, slug, record.version, record.archive_sha256, record.archive_size)
            data = path.read_bytes()
        except HubError as exc:
            raise _failed(url, exc) from None
        finally:
            cache.discard_archive(record.archive_sha256)  # the mirror's store keeps it, not this staging cache
        if hashlib.sha256(data).hexdigest() != record.archive_sha256 or len(data) != record.archive_size:
            raise UpstreamFailed(f"upstream {url}: the archive of {what} does not match its metadata's sha256; refused")
        try:
            members = read_archive(data)
        except ArchiveError as exc:
            raise UpstreamFailed(f"upstream {url}: the archive of {what} is unreadable: {exc}") from None
        check_files(url, what, record, members)
        return data, members

    def close(self) -> None:
        for client in self.clients:
            client.close()
