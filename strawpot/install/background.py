"""Network work that runs beside the main path: archive downloads started while resolution is still
going (speculation), and download counting after an install. Both are best effort and bounded, and
both run on the client's one thread pool (`HubClient.submit`)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hub_client import ArchiveItem, HubClient, VersionInfo
    from strawpot.install.provenance import Ahead
    from strawpot.model.lockfile import LockedPackage


_BUNDLE = 25  # archives per bundle request: a few requests in parallel, each one round trip


class Speculator:
    """Downloads the archive of the version each package will most likely be locked at, into the cache,
    as soon as its metadata arrives (many at once in bundles of `_BUNDLE`, `POST /archives`, when the
    metadata of many arrives at once); `prepare` then finds it there. Errors are ignored here: `prepare`
    fetches again and reports them properly. The first batch also asks for what the provenance check needs
    (`provenance.Ahead`), so that check overlaps the solver instead of following it."""

    def __init__(self, client: HubClient, wanted: Callable[[str, str, str], bool]) -> None:
        self.client = client
        self.wanted = wanted  # (kind, name, version) -> whether it is worth downloading now
        self.futures: list[Future[object]] = []
        self.seen: set[tuple[str, str, str]] = set()
        self.ahead: Ahead | None = None  # the provenance check's requests, made with the first batch
        # the check's modules (cryptography's among them) load on the pool while the first answer is awaited
        client.submit(importlib.import_module, "strawpot.install.provenance")

    def __call__(self, batch: list[tuple[str, str, VersionInfo]]) -> None:
        if self.ahead is None and batch:  # the first batch is the whole graph where the registry answers closures
            from strawpot.install.provenance import Ahead

            self.ahead = Ahead(self.client, [info for _, _, info in batch])
        items: list[ArchiveItem] = []
        for kind, name, info in batch:
            key = (kind, name, info.version)
            if info.sha256 and key not in self.seen and self.wanted(*key):
                self.seen.add(key)
                items.append((kind, name, info.version, info.sha256, info.size))
        if len(items) == 1:
            self.futures.append(self.client.submit(self.client.fetch_archive, *items[0]))
            return
        for start in range(0, len(items), _BUNDLE):  # a few bundles at once, each one round trip
            self.futures.append(self.client.submit(self._bundle, items[start:start + _BUNDLE]))

    def _bundle(self, items: list[ArchiveItem]) -> None:
        got = self.client.fetch_archive_bundle(items)
        for item in items:  # what the bundle did not bring (or a registry without bundles): one by one
            if item not in got:
                with contextlib.suppress(Exception):
                    self.client.fetch_archive(*item)

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the downloads under way (so nothing is fetched twice), then drop what has not started."""
        wait(self.futures, timeout=timeout)
        for future in self.futures:
            future.cancel()


class DownloadCounter:
    """Counts downloads with the registry (v1 `POST /downloads`) concurrently with the rest of the
    install; `finish` waits a bounded time, so counting never fails an install and never slows it much.

    Only for packages installed from v1 files: a registry serving archives counts the archive GET
    itself, and an archive taken from the cache is not counted (like pip's downloads from PyPI).
    """

    def __init__(self, client: HubClient, packages: tuple[LockedPackage, ...] | list[LockedPackage]) -> None:
        self.futures = [client.submit(client.track_download, p.kind.value, p.name, p.version) for p in packages]

    def finish(self, timeout: float = 2.0) -> None:
        with contextlib.suppress(Exception):
            wait(self.futures, timeout=timeout)
        for future in self.futures:
            future.cancel()
