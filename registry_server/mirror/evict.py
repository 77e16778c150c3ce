"""The bound on a mirror's cache (`--upstream-cache-max`): least recently used archives out first, with the file
blobs no archive still kept names; an archive of a package a local package depends on stays."""

from __future__ import annotations

from registry_server.mirror.tables import CachedArchive, MirrorTables
from registry_server.storage.blobs import Blobs


def evict(tables: MirrorTables, blobs: Blobs, limit: int, *, keep: str | None = None,
          dry_run: bool = False) -> list[CachedArchive]:
    """Drop cached archives, least recently used first, until their bytes are at most `limit`; `keep` (the one
    just fetched) and those of packages a local package depends on stay. Returns those dropped (with `dry_run`,
    those that would be)."""
    archives = tables.archives()
    total = sum(a.size for a in archives)
    if total <= limit:
        return []
    held = tables.local_dependencies()
    dropped: list[CachedArchive] = []
    for archive in archives:
        if total <= limit:
            break
        if archive.sha256 != keep and (archive.kind, archive.slug) not in held:
            dropped.append(archive)
            total -= archive.size
    if dry_run or not dropped:
        return dropped
    gone = {a.sha256 for a in dropped}
    still_named = {f for a in archives if a.sha256 not in gone for f in a.files}
    for archive in dropped:
        tables.drop_archive(archive.sha256)  # the row first: a blob without a row is only wasted space
        for sha in (archive.sha256, *archive.files):
            if sha not in still_named:
                blobs.delete(sha)
    return dropped
