"""Open a mirror over the registry's storage from what `registry serve --upstream` was given (picklable, so each
worker process opens its own)."""

from __future__ import annotations

from dataclasses import dataclass

from registry_server.mirror.hops import mirror_id, outgoing
from registry_server.mirror.storage import MirrorStorage
from registry_server.storage.backends import StorageSpec
from registry_server.storage.blobs import Blobs, DirectoryBlobs
from registry_server.storage.sql import SQLStorage

DEFAULT_TTL = 300.0


@dataclass(frozen=True)
class UpstreamSpec:
    urls: tuple[str, ...]
    ttl: float = DEFAULT_TTL
    deadline: float = 10.0
    cache_max: int | None = None


def cache_blobs(spec: StorageSpec) -> Blobs:
    """Where cached archives and files live: beside the registry's own, never among them (`registry gc` of the
    registry's blobs must not see them): `<data>/upstream-blobs`, or `s3://BUCKET/PREFIX-upstream`."""
    if spec.blobs is None:
        return DirectoryBlobs(spec.data_dir / "upstream-blobs")
    from registry_server.storage.s3 import S3Blobs, parse_s3_url

    _, prefix = parse_s3_url(spec.blobs)
    if not prefix:
        raise ValueError(f"--blobs {spec.blobs}: a mirror needs a prefix (s3://BUCKET/PREFIX) so that its cache "
                         "(PREFIX-upstream) lives apart from the registry's own blobs")
    return S3Blobs(spec.blobs.rstrip("/") + "-upstream", endpoint=spec.s3_endpoint, create=True)


def open_mirror(local: SQLStorage, spec: StorageSpec, upstream: UpstreamSpec) -> MirrorStorage:
    from registry_server.mirror.upstream import Upstream

    hop_id = mirror_id(str(spec.data_dir.resolve()), spec.database or "", spec.blobs or "")
    client = Upstream(list(upstream.urls), spec.data_dir / "upstream-fetch", deadline=upstream.deadline,
                      headers=lambda: outgoing(hop_id))
    return MirrorStorage(local, cache_blobs(spec), client, ttl=upstream.ttl, cache_max=upstream.cache_max,
                         hop_id=hop_id)
