"""What every handler shares: the storage and the in-process caches in front of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.requests import Request

from registry_server.budget import ARCHIVES_BUDGET, ByteBudget
from registry_server.cache import BlobCache, VersionsCache
from registry_server.downloads import DownloadTally
from registry_server.errors import ApiError
from registry_server.slots import LARGE_BUDGET, WAIT, UploadSlots
from registry_server.storage.base import Storage
from strawpot.model.kinds import Kind

KINDS = {kind.plural: kind for kind in Kind}




@dataclass
class Registry:
    storage: Storage
    versions: VersionsCache = field(init=False)
    blobs: BlobCache = field(init=False)
    downloads: DownloadTally = field(init=False)
    archives_in_flight: ByteBudget = field(init=False)
    slot_wait: float = WAIT
    upload_budget: int = LARGE_BUDGET
    archives_budget: int = ARCHIVES_BUDGET
    allow_ranges: bool = False  # publishes may carry dependency ranges (`registry serve --allow-ranges`)
    require_signatures: bool = False  # unsigned publishes refused (`registry serve --require-signatures`)
    generation: int = field(init=False, default=0)  # bumped by every change; derived caches compare it
    _slots: UploadSlots | None = field(init=False, default=None)
    _seen: int | None = field(init=False, default=None)  # the storage's change counter the caches reflect

    def __post_init__(self) -> None:
        self.versions = VersionsCache(self.storage)
        self.blobs = BlobCache(self.storage)
        self.downloads = DownloadTally(self.storage)
        self.archives_in_flight = ByteBudget(self.archives_budget)

    def upload_slots(self) -> UploadSlots:
        """The upload slots (created on first use, inside the event loop)."""
        if self._slots is None:
            self._slots = UploadSlots(self.slot_wait, self.upload_budget)
        return self._slots

    def close(self) -> None:
        """Write what is still only in memory (download counts); the storage stays open."""
        self.downloads.close()

    def sync(self) -> None:
        """Drop every cache if any process changed the registry since the last look (see `fresh.py`)."""
        seq = self.storage.change_seq()
        if seq != self._seen:
            if self._seen is not None:
                self.versions.clear()
                self.generation += 1
            self._seen = seq

    def changed(self, kind: Kind, slug: str) -> None:
        """A publish, yank or delete happened: forget what the caches hold for the package."""
        self.versions.invalidate(kind, slug)
        self.generation += 1


def registry(request: Request) -> Registry:
    reg: Registry = request.app.state.registry
    return reg


def path_kind(request: Request) -> Kind:
    """The kind named by the `{kinds}` path segment (plural), or a 404."""
    plural = request.path_params["kinds"]
    kind = KINDS.get(plural)
    if kind is None:
        raise ApiError(404, f"unknown package kind {plural!r} (expected one of: {', '.join(KINDS)})")
    return kind


def body_kind(value: object) -> Kind:
    """A kind named in a JSON body (singular or plural), or a 400."""
    if not isinstance(value, str):
        raise ApiError(400, "'kind' must be one of: " + ", ".join(k.value for k in Kind))
    try:
        return Kind.parse(value)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
