"""HubClient: a thread-safe httpx client for the registry API (v1 and extensions), with retries and a cache."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from ._archives import ArchiveItem, ArchiveRequests
from ._metadata import MetadataRequests
from ._models import check_slug, check_version, kind_and_plural
from ._responses import SizeLimits, read_capped
from ._retry import RetryPolicy
from ._session import API

__all__ = ["ArchiveItem", "HubClient", "RetryPolicy", "SizeLimits"]  # the last two: its constructor's


def _check_relative_path(path: str) -> str:
    pure = PurePosixPath(path)
    if not path or "\\" in path or pure.is_absolute() or ".." in pure.parts or str(pure) != path:
        raise ValueError(f"file path must be relative POSIX without '..': {path!r}")
    return path


class HubClient(MetadataRequests, ArchiveRequests):
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

    `extra_headers`, when given, is called for every request (in the thread that sends it) and its headers are
    added: a mirror's hop list (registry_server/mirror), which depends on the request being answered.

    What the registry supports (its extensions) is learnt from its first telling answer and kept in
    `capabilities` for the client's lifetime.

    Time: `timeout` bounds each wait for the network (connect, or one read); `request_deadline`
    bounds one request from its first attempt to the last byte of its answer, retries and backoff
    included; `deadline` bounds everything the client does from its creation (one command's budget).
    Past either, the request fails with DeadlineExceeded (a RegistryUnreachable), however slowly the
    server keeps sending. None means no such bound.
    """

    # -- v1 endpoints (display data comes back as the server's dict) --------------------------------

    def detail(self, kind: str, slug: str, version: str | None = None) -> dict[str, Any]:
        """The v1 detail of a package; with `version`, that version under `latestVersion`."""
        _, plural = kind_and_plural(kind)
        check_slug(slug)
        params = {"version": check_version(version)} if version is not None else None
        return self._get_json(f"{API}/{plural}/{slug}", params)

    def list_packages(self, kind: str, limit: int = 50, sort: str = "updated") -> dict[str, Any]:
        """`{"items": [...]}`: packages of one kind, by `updated`, `downloads` or `stars`."""
        _, plural = kind_and_plural(kind)
        return self._get_json(f"{API}/{plural}", {"limit": limit, "sort": sort})

    def search(self, query: str, kind: str = "all", limit: int = 20) -> dict[str, Any]:
        """`{"results": [...], "count": n}` for a query over one kind or `all`."""
        return self._get_json(f"{API}/search", {"q": query, "kind": kind, "limit": limit})

    def advisories(self, kind: str | None = None, slug: str | None = None) -> dict[str, Any]:
        """`{"format": 1, "advisories": [...]}`: the security advisories the registry publishes (an extension; a
        registry without it answers 404, raised as NotFound)."""
        params: dict[str, str | int] = {}
        if kind is not None:
            params["kind"] = kind_and_plural(kind)[0]
        if slug is not None:
            check_slug(slug)
            params["slug"] = slug
        return self._get_json(f"{API}/advisories", params or None)

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
        path = f"{API}/{plural}/{slug}/versions/{quote(check_version(version), safe='')}/yank"
        return self._call("POST", path, self._json, json_body={"yanked": yanked})

    # -- publisher keys and the transparency log (docs/registry-api.md) ------------------------------

    def register_key(self, public_key: str) -> dict[str, Any]:
        """Add a base64 Ed25519 public key to the token's account."""
        return self._call("POST", f"{API}/keys", self._json, json_body={"publicKey": public_key})

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return self._call("POST", f"{API}/keys/revoke", self._json, json_body={"keyId": key_id})

    def user_keys(self, handle: str, log: str | None = None) -> dict[str, Any]:
        """`{handle, keys: [...]}`, revoked keys included; with `log`, those of the mirror's upstream at that URL."""
        return self._get_json(f"{API}/users/{quote(handle, safe='')}/keys", None if log is None else {"log": log})

    def log_head(self) -> dict[str, Any]:
        return self._get_json(f"{API}/log/head")

    def log_entries(self, start: int, end: int) -> dict[str, Any]:
        return self._get_json(f"{API}/log/entries", {"start": start, "end": end})

    def log_inclusion(self, index: int, size: int) -> dict[str, Any]:
        return self._get_json(f"{API}/log/proof/inclusion", {"index": index, "size": size})

    def log_consistency(self, first: int, second: int, log: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"first": first, "second": second}
        return self._get_json(f"{API}/log/proof/consistency", params if log is None else {**params, "log": log})

    def log_proofs(self, size: int | None, indexes: list[int], log: str | None = None) -> dict[str, Any]:
        """`{size, entries: [{index, entry, proof}]}`: several inclusion proofs in one request; with `size` None, at
        the current tree head, which the answer carries as `head` (one round trip for both). With `log`, a mirror
        answers for its upstream at that URL (the log a mirrored version's `log` names)."""
        body: dict[str, Any] = {"indexes": indexes} if size is None else {"size": size, "indexes": indexes}
        return self._call("POST", f"{API}/log/proofs", self._json, json_body=body if log is None else {**body, "log": log})
