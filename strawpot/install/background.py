"""Network work that runs beside the main path: archive downloads started while resolution is still
going (speculation), and download counting after an install. Both are best effort and bounded."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
        self.pool = ThreadPoolExecutor(max_workers=client.max_workers, thread_name_prefix="speculate")
        self.futures: list[Future[object]] = []
        self.seen: set[tuple[str, str, str]] = set()

    def __call__(self, kind: str, name: str, info: VersionInfo) -> None:
        key = (kind, name, info.version)
        if not info.sha256 or key in self.seen or not self.wanted(*key):
            return
        self.seen.add(key)
        self.futures.append(self.pool.submit(self.client.fetch_archive, kind, name, info.version, info.sha256, info.size))

    def settle(self, timeout: float = 120.0) -> None:
        """Wait for the downloads under way (so nothing is fetched twice), then stop."""
        wait(self.futures, timeout=timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)


class DownloadCounter:
    """Counts downloads with the registry concurrently with the rest of the install; `finish` waits a
    bounded time, so counting never fails an install and never slows it much."""

    def __init__(self, client: HubClient, packages: tuple[LockedPackage, ...] | list[LockedPackage]) -> None:
        workers = max(1, min(client.max_workers, len(packages)))
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="track")
        self.futures = [self.pool.submit(client.track_download, p.kind.value, p.name, p.version) for p in packages]

    def finish(self, timeout: float = 2.0) -> None:
        with contextlib.suppress(Exception):
            wait(self.futures, timeout=timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)
