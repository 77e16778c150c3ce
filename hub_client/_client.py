"""HubClient: a thread-safe httpx client for the registry API (v1 and extensions), with retries and a cache."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import as_completed
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx

from ._closure import ClosureAnswer, ClosureDocuments, parse_closure
from ._exceptions import HubError, OfflineMiss, ProtocolError, RegistryUnreachable
from ._models import PackageVersions, check_slug, kind_and_plural, parse_json
from ._responses import SizeLimits, discard_if_cut_off, read_capped, versions_outcome
from ._retry import RetryPolicy
from ._session import API, Session, _log, printable

if TYPE_CHECKING:
    from ._cache import Cache

__all__ = ["ArchiveItem", "HubClient", "RetryPolicy", "SizeLimits"]  # the last two: its constructor's

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# (kind, slug, version, sha256, size): one archive to fetch; also the key of its result
ArchiveItem = tuple[str, str, str, str, int | None]

_MAX_ROOTS = 100  # roots one closure request names (the reference server's limit)
_MAX_KNOWN = 400  # ETags sent with a closure request (its body stays under the server's 64 KiB)
_VERSION_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-")


def _check_version(version: str) -> str:
    if not version or len(version) > 128 or not set(version) <= _VERSION_CHARS:
        raise ValueError(f"invalid version {version!r}")
    return version


def _check_relative_path(path: str) -> str:
    pure = PurePosixPath(path)
    if not path or "\\" in path or pure.is_absolute() or ".." in pure.parts or str(pure) != path:
        raise ValueError(f"file path must be relative POSIX without '..': {path!r}")
    return path




def _valid(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (singular kind, slug) pairs among `items` that name a package; the rest are left out."""
    out = []
    for kind, slug in items:
        with contextlib.suppress(ValueError):
            out.append((kind_and_plural(kind)[0], check_slug(slug)))
    return out


class HubClient(Session):
    """A client for one registry; thread-safe, one pooled httpx.Client shared by all threads.

    `base_url` is the registry root (`http://127.0.0.1:8787`; a trailing `/api/v1` is accepted too).
    `cache` is needed by the archive methods and enables ETag revalidation and `offline` answers.
    Kinds may be given singular (`role`) or plural (`roles`); slugs and versions are validated
    before they go into a URL (ValueError).

    Transport: `http://` and `https://` registries alike are spoken to over http.client (`StdlibTransport`:
    no httpcore; the TLS context httpx would build, made on the first https connection), unless the environment
    names a proxy for the registry's scheme (HTTPS_PROXY, ...): then httpx's own, through that proxy (NO_PROXY
    honoured). `transport=` replaces it (httpx's own, a mock). `verify` is True (the CA bundle httpx would use), False, or the path of a CA bundle to trust.
    `max_workers` bounds the connections and the one thread pool the client runs its concurrent work on
    (`submit`, the `*_many` methods).

    Retries (`RetryPolicy`, `_retry.py`; `retries` and `request_deadline` set its two common fields,
    `retry=` gives a whole policy): GETs are retried on 429, 5xx, connect errors and timeouts (also
    mid-body); POSTs only when they cannot have taken effect (429, 503, connect errors). Backoff is
    exponential with jitter, `Retry-After` is honoured, and one request never sleeps more than 30 s in
    total: a longer `Retry-After` raises RateLimited at once. Other 4xx are never retried. `sleep=` and
    `clock=` replace time.sleep and time.monotonic (tests); `limits=` caps the size of answers.

    What the registry supports (its extensions) is learnt from its first telling answer and kept in
    `capabilities` for the client's lifetime.

    Time: `timeout` bounds each wait for the network (connect, or one read); `request_deadline`
    bounds one request from its first attempt to the last byte of its answer, retries and backoff
    included; `deadline` bounds everything the client does from its creation (one command's budget).
    Past either, the request fails with DeadlineExceeded (a RegistryUnreachable), however slowly the
    server keeps sending. None means no such bound.
    """

    # -- package metadata -------------------------------------------------------------------------

    def _load_cached(self, kind: str, slug: str) -> tuple[PackageVersions, str | None, str] | None:
        """(versions, etag, source) from the cache, or None when absent or unusable."""
        entry = self.cache.get_metadata(self.base_url, kind, slug) if self.cache else None
        if entry is None:
            return None
        try:
            if entry.source == "versions":
                parsed = PackageVersions.from_versions_json(entry.body)
            else:
                parsed = PackageVersions.from_detail_json(kind, entry.body)
        except (KeyError, TypeError, ValueError):
            return None
        return parsed, entry.etag, entry.source

    def package_versions(self, kind: str, slug: str) -> PackageVersions:
        """Every version of a package (the `/versions` extension, or the v1 detail as a fallback)."""
        kind, plural = kind_and_plural(kind)
        check_slug(slug)
        cached = self._load_cached(kind, slug)
        if self.offline:
            if cached is None:
                raise OfflineMiss(f"{kind} {slug!r} is not in the cache (offline)", url=None)
            return cached[0]
        if self.capabilities.has("versions") is not False:
            found = self._versions_extension(kind, plural, slug, cached)
            if found is not None:
                return found
        body = self._get_json(f"{API}/{plural}/{slug}")
        result = self._parse(lambda: PackageVersions.from_detail_json(kind, body), f"{API}/{plural}/{slug}")
        self.capabilities.learn("versions", False)
        if self.cache:
            self.cache.put_metadata(self.base_url, kind, slug, body, etag=None, source="detail")
        return result

    def _versions_extension(
        self, kind: str, plural: str, slug: str, cached: tuple[PackageVersions, str | None, str] | None
    ) -> PackageVersions | None:
        """The `/versions` answer, or None when the server turns out not to have the extension."""
        path = f"{API}/{plural}/{slug}/versions"
        headers = {}
        if cached is not None and cached[2] == "versions" and cached[1]:
            headers["If-None-Match"] = cached[1]

        status, payload = self._call(
            "GET", path, lambda r: versions_outcome(r, self.limits.json), headers=headers, passthrough=frozenset({404, 405})
        )
        if status == 304 and cached is not None:
            self.capabilities.learn("versions", True)
            _log.info("cache: %s %s metadata revalidated (ETag %s, 304 Not Modified)", kind, slug,
                      printable(cached[1] or ""))
            return cached[0]
        if status == 405:  # the server has no /versions: remember, and let the caller use the v1 detail
            self.capabilities.learn("versions", False)
            return None
        if status == 404:  # an unknown slug, or a server that answers unknown routes in JSON
            if self.capabilities.has("versions"):
                raise payload
            return None  # the v1 detail decides: it raises NotFound for an unknown slug
        if payload is None:
            raise ProtocolError(f"unexpected {status} without a body", url=self.base_url + path)
        body, etag = payload
        result = self._parse(lambda: PackageVersions.from_versions_json(body), path)
        if (result.kind, result.slug) != (kind, slug):
            raise ProtocolError(
                f"asked for {kind} {slug}, got {result.kind} {result.slug}", url=self.base_url + path
            )
        self.capabilities.learn("versions", True)
        if self.cache:
            self.cache.put_metadata(self.base_url, kind, slug, body, etag=etag, source="versions")
        return result

    def closure(
        self, roots: Iterable[tuple[str, str]], hints: Iterable[tuple[str, str]] = ()
    ) -> dict[tuple[str, str], PackageVersions] | None:
        """The metadata of every package reachable from `roots` in one request (`POST /closure`), or None
        when there is none to be had: offline, a server without the extension (remembered for this client),
        or an answer that cannot be trusted whole (then the caller asks per package).

        Keyed by (kind, slug), kinds singular. The ETags of cached documents of the roots and of `hints`
        (packages likely in the closure, e.g. a lock's) are sent, so unchanged ones come from the cache.
        A package the answer leaves out is absent from the result. Raises only RegistryUnreachable.
        """
        known_absent = self.capabilities.has("closure") is False or self.capabilities.has("versions") is False
        if self.offline or known_absent:
            return None
        wanted = [(kind_and_plural(k)[0], check_slug(s)) for k, s in roots][:_MAX_ROOTS]  # the rest: per package
        if not wanted:
            return None
        cached: dict[tuple[str, str], PackageVersions] = {}
        known: dict[str, str] = {}
        for kind, slug in dict.fromkeys([*wanted, *_valid(hints)]):
            hit = self._load_cached(kind, slug) if len(known) < _MAX_KNOWN else None
            if hit is not None and hit[2] == "versions" and hit[1]:
                cached[(kind, slug)] = hit[0]
                known[f"{kind}:{slug}"] = hit[1]
        path = f"{API}/closure"
        body = {"roots": [{"kind": k, "slug": s} for k, s in wanted], "known": known}
        try:
            _, answer = self._call("POST", path, discard_if_cut_off(self._closure_outcome), json_body=body,
                                        passthrough=frozenset({404, 405, 501}))
            if answer is None:
                self.capabilities.learn("closure", False)
                return None
            parsed: ClosureAnswer = self._parse(lambda: parse_closure(answer), path)
        except RegistryUnreachable:
            raise
        except HubError:
            return None  # a server error or a malformed answer: per-package requests decide
        self.capabilities.learn("closure", True)
        found = {key: cached[key] for key in parsed.unchanged if key in cached}
        for kind, slug in found:
            _log.info("cache: %s %s metadata revalidated (ETag %s, unchanged in the closure)", kind, slug,
                      printable(known[f"{kind}:{slug}"]))
        for key, (versions, _, _) in parsed.documents.items():
            found[key] = versions
        if self.cache and parsed.documents:  # one file for all, written while the solver runs
            self.write_behind(self._store_closure, parsed.documents)
        return found

    def _closure_outcome(self, response: httpx.Response) -> tuple[int, dict[str, Any] | None]:
        if response.status_code in (404, 405, 501):
            read_capped(response, self.limits.json)
            return response.status_code, None
        return response.status_code, self._json(response)

    def _store_closure(self, documents: ClosureDocuments) -> None:
        assert self.cache is not None
        self.cache.put_metadata_many(
            self.base_url, [(kind, slug, raw, etag, "versions") for (kind, slug), (_, etag, raw) in documents.items()]
        )

    def _parse(self, build: Callable[[], T], path: str) -> T:
        try:
            return build()
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"unexpected body from {path}: {exc}", url=self.base_url + path) from exc

    def package_versions_many(
        self, items: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], PackageVersions | HubError]:
        """`package_versions` for many (kind, slug) at once; results keyed by the items given."""
        return self._map(items, lambda item: self.package_versions(*item))

    def _map(
        self,
        items: Iterable[K],
        work: Callable[[K], T],
        progress: Callable[[K, T | HubError], None] | None = None,
    ) -> dict[K, T | HubError]:
        """Run `work` over the distinct items on a thread pool; HubErrors become values, in input order."""
        keys = list(dict.fromkeys(items))
        done: dict[K, T | HubError] = {}
        if not keys:
            return done
        futures = {self.submit(work, key): key for key in keys}
        try:
            for future in as_completed(futures):
                key = futures[future]
                try:
                    done[key] = future.result()
                except HubError as exc:
                    done[key] = exc
                if progress is not None:
                    progress(key, done[key])
        finally:
            for future in futures:  # an exception (or interrupt) here: do not leave the rest queued
                future.cancel()
        return {key: done[key] for key in keys}

    # -- archives and files -----------------------------------------------------------------------

    def _require_cache(self) -> Cache:
        if self.cache is None:
            raise ValueError("fetching archives needs a HubClient with a cache")
        return self.cache

    def fetch_archive(self, kind: str, slug: str, version: str, sha256: str, size: int | None) -> Path:
        """The path of the version's archive in the cache, downloaded and verified if not already there."""
        kind, plural = kind_and_plural(kind)
        check_slug(slug)
        _check_version(version)
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
            params["version"] = _check_version(version)
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

    # -- v1 endpoints (display data comes back as the server's dict) --------------------------------

    def detail(self, kind: str, slug: str, version: str | None = None) -> dict[str, Any]:
        """The v1 detail of a package; with `version`, that version under `latestVersion`."""
        _, plural = kind_and_plural(kind)
        check_slug(slug)
        params = {"version": _check_version(version)} if version is not None else None
        return self._get_json(f"{API}/{plural}/{slug}", params)

    def list_packages(self, kind: str, limit: int = 50, sort: str = "updated") -> dict[str, Any]:
        """`{"items": [...]}`: packages of one kind, by `updated`, `downloads` or `stars`."""
        _, plural = kind_and_plural(kind)
        return self._get_json(f"{API}/{plural}", {"limit": limit, "sort": sort})

    def search(self, query: str, kind: str = "all", limit: int = 20) -> dict[str, Any]:
        """`{"results": [...], "count": n}` for a query over one kind or `all`."""
        return self._get_json(f"{API}/search", {"q": query, "kind": kind, "limit": limit})

    def whoami(self) -> dict[str, Any]:
        """`{handle, displayName, email, role}` of the token's user (AuthError without a valid token)."""
        return self._get_json(f"{API}/whoami")

    def resolve(self, kind: str, slug: str) -> dict[str, Any]:
        """The server-side v1 resolution of a skill's or role's dependencies."""
        _, plural = kind_and_plural(kind)
        check_slug(slug)
        return self._get_json(f"{API}/{plural}/{slug}/resolve")

    def track_download(self, kind: str, slug: str, version: str | None) -> None:
        """Count a download; best effort: one attempt, never raises, skipped offline."""
        if self.offline:
            return
        with contextlib.suppress(Exception):  # counting downloads must never fail an install
            singular, _ = kind_and_plural(kind)
            body: dict[str, str] = {"kind": singular, "slug": slug}
            if version is not None:
                body["version"] = version
            self._call("POST", f"{API}/downloads", lambda r: None, json_body=body, retries=0)

    def publish(
        self, kind: str, fields: Mapping[str, str], files: Sequence[tuple[str, bytes]]
    ) -> dict[str, Any]:
        """Publish a version (v1 multipart): form `fields` plus one `files` part per (relative path, bytes)."""
        _, plural = kind_and_plural(kind)
        parts = [
            ("files", (_check_relative_path(path), content, "application/octet-stream"))
            for path, content in files
        ]
        return self._call("POST", f"{API}/{plural}", self._json, data=dict(fields), files=parts)

    def publish_batch(
        self, members: Sequence[tuple[str, Mapping[str, str], Sequence[tuple[str, bytes]]]]
    ) -> dict[str, Any]:
        """Publish several versions all or none (the `/batch` extension): member n's `fields` and files are
        the publish form of `publish`, each part named `n.<name>`, plus `n.kind`."""
        data: dict[str, str] = {}
        parts: list[tuple[str, tuple[str, bytes, str]]] = []
        for n, (kind, fields, files) in enumerate(members):
            singular, _ = kind_and_plural(kind)
            data[f"{n}.kind"] = singular
            data.update({f"{n}.{key}": value for key, value in fields.items()})
            parts += [(f"{n}.files", (_check_relative_path(path), content, "application/octet-stream"))
                      for path, content in files]
        return self._call("POST", f"{API}/batch", self._json, data=data, files=parts)

    def has_batch(self) -> bool:
        """Whether the registry has the `/batch` extension: an empty form is sent, which publishes nothing
        (an extension-less server answers 404 or 405)."""
        status = self._call("POST", f"{API}/batch", lambda r: (read_capped(r, self.limits.json), r.status_code)[1], data={},
                            passthrough=frozenset(range(400, 600)), retries=0)
        return status not in (404, 405, 501)

    def yank(self, kind: str, slug: str, version: str, yanked: bool = True) -> dict[str, Any]:
        """Yank (or with `yanked=False` restore) a version; owner or admin only."""
        _, plural = kind_and_plural(kind)
        check_slug(slug)
        path = f"{API}/{plural}/{slug}/versions/{quote(_check_version(version), safe='')}/yank"
        return self._call("POST", path, self._json, json_body={"yanked": yanked})
