"""The entries of the transparency log: one canonical JSON text per publish, yank and key change."""

from __future__ import annotations

import hashlib

from strawpot.model.kinds import Kind
from strawpot.model.merkle import leaf_hash
from strawpot.model.provenance import canonical


def publish_entry(kind: Kind, slug: str, version: str, archive_sha256: str, publisher: str,
                  statement: str | None, key_id: str | None, stamp: int) -> str:
    digest = None if statement is None else hashlib.sha256(statement.encode("utf-8")).hexdigest()
    return canonical({"type": "publish", "kind": kind.value, "slug": slug, "version": version,
                      "archiveSha256": archive_sha256, "publisher": publisher, "keyId": key_id,
                      "statementSha256": digest, "time": stamp}).decode("utf-8")


def yank_entry(kind: Kind, slug: str, version: str, yanked: bool, stamp: int) -> str:
    return canonical({"type": "yank" if yanked else "unyank", "kind": kind.value, "slug": slug, "version": version,
                      "time": stamp}).decode("utf-8")


def key_entry(action: str, handle: str, key_id: str, public_key: str, stamp: int) -> str:
    return canonical({"type": f"key-{action}", "handle": handle, "keyId": key_id, "publicKey": public_key,
                      "time": stamp}).decode("utf-8")


def leaf_hex(entry: str) -> str:
    return leaf_hash(entry.encode("utf-8")).hex()
