"""Archives and files of package versions: one, many at once, or many in one bundle request, each checked
against its sha256 and size into the cache."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from ._exceptions import HubError, OfflineMiss, ProtocolError, RegistryUnreachable
from ._models import check_slug, check_version, kind_and_plural, parse_json
from ._responses import discard_if_cut_off, read_capped
from ._session import API, Session

if TYPE_CHECKING:
    from ._cache import Cache

# (kind, slug, version, sha256, size): one archive to fetch; also the key of its result
ArchiveItem = tuple[str, str, str, str, int | None]


class ArchiveRequests(Session):
    """The archive and file half of HubClient (see there for retries, time limits and the cache)."""

    def _require_cache(self) -> Cache:
        if self.cache is None:
            raise ValueError("fetching archives needs a HubClient with a cache")
        return self.cache

    def fetch_archive(self, kind: str, slug: str, version: str, sha256: str, size: int | None) -> Path:
        """The path of the version's archive in the cache, downloaded and verified if not already there."""
        kind, plural = kind_and_plural(kind)
        check_slug(slug)
        check_version(version)
        cache = self._require_cache()
        hit = cache.get_archive(sha256)
        what = f"archive of {kind} {slug} {version}"
        if hit is not None:
            cache.report_hit(sha256, what)
            return hit
        if self.offline:
            raise OfflineMiss(f"{what} is not in the cache (offline)")
        path = f"{API}/{plural}/{slug}/versions/{quote(version, safe='')}/archive"
        if size is not None and not 0 <= size <= self.limits.archive:
            raise ProtocolError(
                f"the registry declares the {what} as {size} bytes, over the limit of {self.limits.archive} bytes;"
                " refused before downloading it", url=self.base_url + path,
            )

        def store(response: httpx.Response) -> Path:
            url = str(response.request.url)
            return cache.put_archive_stream(
                response.iter_bytes(), sha256, size=size, what=what, url=url, limit=self.limits.archive
            )

        return self._call(
            "GET", path, store, headers={"Accept": "application/gzip", "Accept-Encoding": "identity"}
        )

    def fetch_archives(
        self,
        items: Iterable[ArchiveItem],
        progress: Callable[[ArchiveItem, Path | HubError], None] | None = None,
    ) -> dict[ArchiveItem, Path | HubError]:
        """`fetch_archive` for many (kind, slug, version, sha256, size) at once, keyed by those tuples.

        `progress(item, result)` is called in the calling thread as each item finishes.
        """
        return self._map(items, lambda item: self.fetch_archive(*item), progress)

    def fetch_archive_bundle(self, items: Sequence[ArchiveItem]) -> set[ArchiveItem]:
        """Many archives in one request (`POST /archives`), each checked against its item's sha256 and size
        and stored in the cache; returns the items now in the cache (read them with `Cache.read_archive`).
        What did not arrive, or arrived wrong, is left out (the caller fetches it with `fetch_archive`, which
        reports the error). A registry without the extension is remembered and not asked again. Raises only
        RegistryUnreachable."""
        cache = self._require_cache()
        stored: set[ArchiveItem] = set()
        for item in items:
            if cache.has_archive(item[3]):
                cache.report_hit(item[3], f"archive of {kind_and_plural(item[0])[0]} {item[1]} {item[2]}")
                stored.add(item)
        items = [item for item in items if item not in stored]
        if self.offline or self.capabilities.has("bundle") is False or not items:
            return stored
        wanted = {(kind_and_plural(k)[0], s, v): (k, s, v, sha, size) for k, s, v, sha, size in items}
        body = {"items": [{"kind": k, "slug": s, "version": v} for k, s, v in wanted]}
        limit = self.limits.json + (1 << 20)  # the reference server sends at most 64 MB of archives

        def read(response: httpx.Response) -> bytes | None:
            return None if response.status_code in (404, 405, 501) else read_capped(response, limit)

        try:
            data = self._call("POST", f"{API}/archives", discard_if_cut_off(read), json_body=body, passthrough=frozenset({404, 405, 501}),
                              headers={"Accept": "application/octet-stream", "Accept-Encoding": "identity"})
        except RegistryUnreachable:
            raise
        except HubError:
            return stored
        if data is None:
            self.capabilities.learn("bundle", False)
            return stored
        self.capabilities.learn("bundle", True)
        head, _, rest = data.partition(b"\n")
        try:
            index = parse_json(head)
        except ValueError:
            return stored
        offset = 0
        for entry in index if isinstance(index, list) else ():
            size = entry.get("size") if isinstance(entry, dict) else None
            if not isinstance(size, int) or size < 0 or offset + size > len(rest):
                break  # the index and the bytes disagree: trust nothing after this point
            chunk, offset = rest[offset:offset + size], offset + size
            key = (entry.get("kind"), entry.get("slug"), entry.get("version"))
            found = wanted.get(key) if all(isinstance(p, str) for p in key) else None
            if found is None or found in stored:
                continue
            with contextlib.suppress(HubError, ValueError):
                cache.put_archive_behind(chunk, found[3], size=found[4], what=f"archive of {key[0]} {key[1]}")
                stored.add(found)
        self.write_behind(cache.write_pending)  # the files, while the caller installs from memory
        return stored

    def fetch_file(self, kind: str, slug: str, path: str, version: str | None = None) -> bytes:
        """The raw bytes of one file of a version (v1; the latest version when `version` is None)."""
        _, plural = kind_and_plural(kind)
        check_slug(slug)
        params: dict[str, str | int] = {"path": path}
        if version is not None:
            params["version"] = check_version(version)
        return self._call(
            "GET",
            f"{API}/{plural}/{slug}/file",
            lambda r: read_capped(r, self.limits.file),
            params=params,
            headers={"Accept": "*/*"},
        )

    def fetch_files(
        self, kind: str, slug: str, version: str | None, paths: Iterable[str]
    ) -> dict[str, bytes]:
        """Several files of one version, fetched concurrently; the first failure (in `paths` order) raises."""
        results = self._map(paths, lambda p: self.fetch_file(kind, slug, p, version))
        out: dict[str, bytes] = {}
        for file_path, result in results.items():
            if isinstance(result, HubError):
                raise result
            out[file_path] = result
        return out
