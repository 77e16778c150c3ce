"""httpx client for the StrawHub registry API (v1 and extensions) with a content-addressed download cache."""

from __future__ import annotations

from . import _lean  # noqa: F401 - first: httpx without its CLI (see _lean)
from ._cache import Cache, CachedMetadata, CacheLimits
from ._client import ArchiveItem, HubClient, RetryPolicy, SizeLimits
from ._exceptions import (
    AuthError,
    DeadlineExceeded,
    HubError,
    IntegrityError,
    NotFound,
    OfflineMiss,
    ProtocolError,
    RateLimited,
    RegistryUnreachable,
    ServerError,
)
from ._models import KINDS, FileInfo, PackageVersions, VersionInfo

__all__ = [
    "ArchiveItem",
    "AuthError",
    "Cache",
    "CacheLimits",
    "CachedMetadata",
    "DeadlineExceeded",
    "FileInfo",
    "HubClient",
    "HubError",
    "IntegrityError",
    "KINDS",
    "NotFound",
    "OfflineMiss",
    "PackageVersions",
    "ProtocolError",
    "RateLimited",
    "RegistryUnreachable",
    "RetryPolicy",
    "ServerError",
    "SizeLimits",
    "VersionInfo",
]
