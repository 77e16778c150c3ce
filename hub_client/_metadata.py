"""Package metadata from the registry: a package's versions (the `/versions` extension, or the v1 detail) and
the closure of many packages in one request, each revalidated against the cache by its ETag."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx

from ._closure import ClosureAnswer, ClosureDocuments, parse_closure
from ._exceptions import HubError, OfflineMiss, ProtocolError, RegistryUnreachable
from ._models import PackageVersions, check_slug, kind_and_plural
from ._responses import discard_if_cut_off, read_capped, versions_outcome
from ._session import API, Session, _log, printable

T = TypeVar("T")

_MAX_ROOTS = 100  # roots one closure request names (the reference server's limit)
_MAX_KNOWN = 400  # ETags sent with a closure request (its body stays under the server's 64 KiB)


def _valid(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (singular kind, slug) pairs among `items` that name a package; the rest are left out."""
    out = []
    for kind, slug in items:
        with contextlib.suppress(ValueError):
            out.append((kind_and_plural(kind)[0], check_slug(slug)))
    return out


class MetadataRequests(Session):
    """The metadata half of HubClient (see there for retries, time limits and the cache)."""

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
