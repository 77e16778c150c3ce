"""Network work that runs beside the main path: archive downloads started while resolution is still
going (speculation), and download counting after an install. Both are best effort and bounded, and
both run on the client's one thread pool (`HubClient.submit`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hub_client import HubClient, VersionInfo
    from strawpot.model.lockfile import LockedPackage


class Speculator:
    """Downloads the archive of the version each package will most likely be locked at, into the cache,
    as soon as its metadata arrives; `prepare` then finds it there. Errors are ignored here: `prepare`
    fetches again and reports them properly."""

    def __init__(self, client: HubClient, wanted: Callable[[str, str, str], bool]) -> None:
        self.client = client
        self.wanted = wanted  # (kind, name, version) -> whether it is worth downloading now
        self.futures: list[Future[object]] = []
        self.seen: set[tuple[str, str, str]] = set()

    def __call__(self, kind: str, name: str, info: VersionInfo) -> None:
        key = (kind, name, info.version)
        if not info.sha256 or key in self.seen or not self.wanted(*key):
            return
        self.seen.add(key)
        self.futures.append(self.client.submit(self.client.fetch_archive, kind, name, info.version, info.sha256, info.size))

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
