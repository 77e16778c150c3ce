"""How fetching from upstream fails: `UpstreamFailed` (from the client side) and `UpstreamUnavailable` (what the
HTTP layer answers when the cache cannot stand in)."""

from __future__ import annotations

from registry_server.storage.base import StorageUnavailable


class UpstreamFailed(Exception):
    """Upstream could not be reached in time, or (`refused`) answered something a mirror refuses; one line naming
    it."""

    def __init__(self, message: str, *, refused: bool = True) -> None:
        super().__init__(message)
        self.refused = refused


class UpstreamUnavailable(StorageUnavailable):
    """Upstream could not give what was asked and the cache has nothing to stand in: a 503 naming upstream (502
    when upstream answered something refused, which retrying will not mend)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused
