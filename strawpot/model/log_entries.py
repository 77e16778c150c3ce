"""The transparency log's wire shapes, which the registry writes and the client checks: one canonical JSON text per
publish, yank and key change, and the body a signed tree head signs."""

from __future__ import annotations

from typing import Any

from strawpot.model.kinds import Kind
from strawpot.model.merkle import leaf_hash
from strawpot.model.provenance import canonical
from strawpot.model.sha import sha256

# what a client names a publish entry's fields by, when one does not match
FIELD_WORDS = {"archiveSha256": "archive sha256", "keyId": "signing key", "statementSha256": "statement sha256"}


def publish_fields(kind: Kind, slug: str, version: str, archive_sha256: str | None, statement: str | None,
                   key_id: str | None) -> dict[str, Any]:
    """What a publish entry says of the version it logs (the entry adds its publisher and time)."""
    digest = None if statement is None else sha256(statement.encode("utf-8")).hexdigest()
    return {"type": "publish", "kind": kind.value, "slug": slug, "version": version,
            "archiveSha256": archive_sha256, "keyId": key_id, "statementSha256": digest}


def publish_entry(kind: Kind, slug: str, version: str, archive_sha256: str, publisher: str,
                  statement: str | None, key_id: str | None, stamp: int) -> str:
    return canonical({**publish_fields(kind, slug, version, archive_sha256, statement, key_id),
                      "publisher": publisher, "time": stamp}).decode("utf-8")


def yank_entry(kind: Kind, slug: str, version: str, yanked: bool, stamp: int) -> str:
    return canonical({"type": "yank" if yanked else "unyank", "kind": kind.value, "slug": slug, "version": version,
                      "time": stamp}).decode("utf-8")


def key_entry(action: str, handle: str, key_id: str, public_key: str, stamp: int) -> str:
    return canonical({"type": f"key-{action}", "handle": handle, "keyId": key_id, "publicKey": public_key,
                      "time": stamp}).decode("utf-8")


def head_body(size: int, root_hex: str, time: int) -> bytes:
    """The bytes a tree head's signature covers."""
    return canonical({"rootHash": root_hex, "size": size, "time": time})


def leaf_hex(entry: str) -> str:
    return leaf_hash(entry.encode("utf-8")).hex()
