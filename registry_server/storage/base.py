"""The `Storage` protocol the HTTP layer talks to, and the records it hands back."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from strawpot.model.kinds import Kind

ROLES = ("user", "moderator", "admin")


class StorageError(Exception):
    """Base of the failures a storage reports to the HTTP layer (each maps to one status)."""


class NotOwner(StorageError):
    """The package belongs to another user."""


class VersionConflict(StorageError):
    """The version exists already, or is not greater than the latest (a racing publish lost)."""


class PackageDeleted(StorageError):
    """The package was deleted; its slug is never published again (deletes are final)."""


class StorageUnavailable(StorageError):
    """The database or the blob store cannot be reached now (answered 503; the next request retries)."""


class KeyConflict(StorageError):
    """The public key is registered already (keys are never reused, even revoked ones)."""


class ConnectFailed(Exception):
    """The database refused or could not be reached at start-up; the message names the server, not the password.
    (Here, not in postgres.py, so that catching it needs no psycopg: the `strawpot[postgres]` extra.)"""


@dataclass(frozen=True)
class User:
    id: int
    handle: str
    display_name: str
    email: str
    role: str = "user"
    banned: bool = False

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def is_moderator(self) -> bool:
        return self.role in ("admin", "moderator")


@dataclass(frozen=True)
class TokenInfo:
    """A stored token: only its SHA-256 is kept, never the token itself."""

    hash: str
    handle: str
    created_at: int  # ms since the epoch


@dataclass(frozen=True)
class FileEntry:
    """One file of a published version; its bytes are the blob `sha256`."""

    path: str
    size: int
    sha256: str
    executable: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256, "executable": self.executable}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileEntry:
        return cls(data["path"], int(data["size"]), data["sha256"], bool(data.get("executable", False)))


@dataclass(frozen=True)
class VersionRecord:
    """One immutable published version (only `yanked` ever changes)."""

    version: str
    changelog: str
    dependencies: dict[str, list[str]]
    files: tuple[FileEntry, ...]
    archive_sha256: str
    archive_size: int
    created_at: int
    default_agent: str | None = None
    tools: dict[str, Any] = field(default_factory=dict)
    yanked: bool = False
    id: int = 0
    statement: str | None = None  # the signed publish statement (strawpot.model.provenance), if any
    signature: str | None = None
    key_id: str | None = None
    log_index: int | None = None  # where the publish sits in the transparency log
    log: str | None = None  # the registry whose log that is, when not this one (a mirror's upstream)

    def meta_json(self) -> dict[str, Any]:
        """The immutable part stored as one JSON document."""
        return {
            "dependencies": self.dependencies,
            "defaultAgent": self.default_agent,
            "tools": self.tools,
            "files": [f.to_json() for f in self.files],
        }


@dataclass(frozen=True)
class KeyRecord:
    """A publisher's Ed25519 public key (base64 raw bytes); `revoked_at` None while it signs."""

    key_id: str
    handle: str
    public_key: str
    created_at: int
    revoked_at: int | None = None
    log_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"keyId": self.key_id, "handle": self.handle, "publicKey": self.public_key,
                "createdAt": self.created_at, "revokedAt": self.revoked_at, "logIndex": self.log_index}


@dataclass(frozen=True)
class PackageRecord:
    kind: Kind
    slug: str
    display_name: str
    summary: str
    owner: User
    downloads: int
    stars: int
    version_count: int
    created_at: int
    updated_at: int
    tags: tuple[str, ...] = ()
    id: int = 0


@dataclass(frozen=True)
class Advisory:
    """A security advisory against the versions of one package that `affected` (a version specifier) names."""

    kind: Kind
    slug: str
    affected: str
    severity: str  # strawpot.model.advisory.SEVERITIES
    summary: str
    created_at: int = 0  # ms since the epoch
    id: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind.value, "slug": self.slug, "range": self.affected,
                "severity": self.severity, "summary": self.summary, "createdAt": self.created_at}


@dataclass(frozen=True)
class NewVersion:
    """What a validated publish hands to `Storage.publish` (blobs already stored)."""

    kind: Kind
    slug: str
    display_name: str
    summary: str
    tags: tuple[str, ...]
    record: VersionRecord


@dataclass(frozen=True)
class Published:
    package_id: int
    version_id: int


class Storage(Protocol):
    """Metadata and content-addressed blobs of a registry.

    Blobs are written before the metadata that names them; `publish` is one atomic step that
    re-checks ownership and version order, so a crash or a racing publish never leaves a version
    half-visible. Implementations must be safe to call from several threads.
    """

    remote: bool  # reads cross the network: the event loop never waits for them, a worker thread does

    # users and tokens
    def ensure_user(self, handle: str, *, role: str | None = None) -> User: ...
    def add_token(self, user_id: int, token_hash: str) -> None: ...
    def user_by_token(self, token_hash: str) -> User | None: ...
    def list_tokens(self) -> list[TokenInfo]: ...  # oldest first
    def revoke_token(self, token_hash: str) -> bool: ...  # False if no such token
    def user_by_handle(self, handle: str) -> User | None: ...
    def set_role(self, handle: str, role: str) -> User | None: ...
    def set_banned(self, handle: str, banned: bool, reason: str | None) -> User | None: ...

    # packages
    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None: ...
    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]: ...
    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None: ...
    def publish(self, new: NewVersion, owner: User) -> Published: ...
    def publish_batch(self, news: Sequence[NewVersion], owner: User) -> list[Published]:
        """Publish every version in one transaction, each checked as `publish` checks it: all or none."""
        ...

    def set_yanked(self, kind: Kind, slug: str, version: str, yanked: bool) -> bool: ...
    def delete_package(self, kind: Kind, slug: str) -> bool: ...
    def add_download(self, kind: Kind, slug: str) -> bool: ...
    def add_downloads(self, counts: Mapping[tuple[Kind, str], int]) -> None: ...
    def toggle_star(self, user: User, kind: Kind, slug: str) -> tuple[bool, int] | None: ...

    # advisories (an admin adds them with `strawpot registry advisory add`)
    def add_advisory(self, advisory: Advisory) -> Advisory: ...  # stored, with its id and time
    def advisories(self, kind: Kind | None = None, slug: str | None = None) -> list[Advisory]: ...  # oldest first
    # publisher keys and the transparency log (registry_server/transparency.py builds on these)
    def add_key(self, user: User, key_id: str, public_key: str) -> KeyRecord: ...  # KeyConflict if known
    def keys_of(self, handle: str) -> list[KeyRecord]: ...  # oldest first, revoked ones included
    def key(self, key_id: str) -> KeyRecord | None: ...
    def revoke_key(self, user: User, key_id: str) -> KeyRecord | None: ...  # None: not this user's live key
    def log_size(self) -> int: ...
    def log_entries(self, start: int, end: int) -> list[str]: ...  # the canonical JSON texts [start, end)
    def log_leaves(self, size: int) -> list[bytes]: ...  # the leaf hashes of the first `size` entries
    def registry_key(self, make: Callable[[], str]) -> str:
        """The registry's private key (base64): the stored one, or `make()` stored on first call (one winner)."""
        ...

    # what other processes changed, and what the garbage collector keeps
    def change_seq(self) -> int:
        """A number that moves with every publish, yank and delete by any process (cheap to read)."""
        ...

    def live_blobs(self) -> set[str]: ...

    # blobs
    def put_blob(self, data: bytes) -> str: ...
    def get_blob(self, sha256: str) -> bytes | None: ...
    def open_blob(self, sha256: str) -> Iterator[bytes] | None: ...  # chunks of `blobs.CHUNK`; None: missing

    @property
    def remote_blobs(self) -> bool: ...  # blob reads cross the network: never on the event loop
    def blob_path(self, sha256: str) -> Path | None: ...
    def list_blobs(self) -> Iterator[tuple[str, float]]: ...
    def delete_blob(self, sha256: str) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class StoredPackage:
    """What `check_publish` needs to know of a package row, deleted or not."""

    owner_id: int
    deleted: bool
    versions: list[str]


def check_publish(kind: Kind, slug: str, stored: StoredPackage | None, owner: User, version: str) -> None:
    """The publish rule every storage applies inside its publish transaction, in this order:

    - deletes are final: a deleted package's slug is refused to everybody, its owner included, so a
      publish can never bring its versions back (PackageDeleted);
    - only the owner adds versions (NotOwner);
    - the version is new and greater than every existing one (VersionConflict).
    """
    if stored is None:
        return
    if stored.deleted:
        raise PackageDeleted(
            f"{kind.value} {slug!r} was deleted from this registry and deletes are final: its name cannot be "
            "published again; publish under another name"
        )
    if stored.owner_id != owner.id:
        raise NotOwner(f"{kind.value} {slug!r} belongs to another user")
    check_publishable(stored.versions, version)


def check_publishable(existing: list[str], new: str) -> None:
    """Raise VersionConflict unless `new` is unused and greater than every existing version."""
    from resolver import Version

    if new in existing:
        raise VersionConflict(f"version {new} already exists; published versions are immutable")
    parsed = Version.parse(new)
    latest = max((Version.parse(v) for v in existing), default=None)
    if latest is not None and not parsed > latest:
        raise VersionConflict(f"version {new} must be greater than the latest version {latest}")
