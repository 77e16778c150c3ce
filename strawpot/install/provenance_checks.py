"""The provenance checks an install makes online and `verify` and `install --offline` make from the cache."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from strawpot.model import merkle
from strawpot.model.errors import IntegrityFailure
from strawpot.model.lockfile import LockedPackage, LockedSigner, Lockfile
from strawpot.model.log_entries import FIELD_WORDS, head_body, publish_fields
from strawpot.model.provenance import BadSignature, key_id, load_public, parse_signed, verify
from strawpot.model.sha import sha256

_HINT = "nothing was installed; if the change is expected, find out why before going on"


def fail(url: str, what: str, hint: str = _HINT) -> IntegrityFailure:
    return IntegrityFailure(f"provenance check failed for {url}: {what}", hint=hint)


def what(pkg: LockedPackage) -> str:
    return f"{pkg.kind.value} {pkg.name} {pkg.version}"


def state_path(cache: Path, url: str) -> Path:
    """The last signed tree head this machine saw for the registry at `url`, and the log key pinned."""
    return cache / "provenance" / (sha256(url.encode()).hexdigest()[:32] + ".json")


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object kept in the cache folder; None when absent or damaged (it is learnt again, like a first use)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_head(head: Any, url: str, pinned: str | None) -> tuple[int, bytes, str]:
    """A signed tree head's (size, root, log key), its signature checked; pinned to `pinned` when given."""
    try:
        size, root, public = int(head["size"]), bytes.fromhex(str(head["rootHash"])), str(head["publicKey"])
        body = head_body(size, str(head["rootHash"]), int(head["time"]))
        load_public(public).verify(base64.b64decode(str(head["signature"])), body)
    except Exception as exc:  # noqa: BLE001 - any malformed or unverifiable head is the same refusal
        raise fail(url, f"the log's tree head does not verify ({type(exc).__name__})") from None
    if pinned is not None and public != pinned:
        raise fail(url, f"the log is signed by key {key_id(load_public(public).public_bytes_raw())}, not the pinned "
                        f"{key_id(load_public(pinned).public_bytes_raw())}")
    return size, root, public


def check_entry(url: str, pkg: LockedPackage, index: int, size: int, root: bytes, text: str, proof: Any,
                statement: str | None, signing_key: str | None) -> dict[str, Any]:
    """The log entry `text` at `index`: included in the tree (size, root), naming this version, archive, statement
    and key; its fields, or IntegrityFailure."""
    try:
        merkle.check_inclusion(index, size, merkle.leaf_hash(text.encode()),
                               [bytes.fromhex(str(p)) for p in proof], root)
        entry = json.loads(text)
        if not isinstance(entry, dict):
            raise ValueError(f"the log entry {index} is not a JSON object")
    except (merkle.ProofFailed, ValueError, TypeError) as exc:
        raise fail(url, f"{what(pkg)}: {exc}") from None
    expect = publish_fields(pkg.kind, pkg.name, pkg.version, pkg.archive_sha256, statement, signing_key)
    wrong = [FIELD_WORDS.get(k, k) for k, v in expect.items() if entry.get(k) != v]
    if wrong:
        raise fail(url, f"the log entry {index} does not match {what(pkg)}: its {', '.join(wrong)} differ")
    return entry


def publisher_of(url: str, pkg: LockedPackage, statement: str, signature: str, named_key: str) -> str:
    """The publisher a well-formed statement of exactly this version and archive names; IntegrityFailure otherwise."""
    try:
        body = parse_signed(statement, signature, named_key).body
        if (body["kind"], body["slug"], body["version"], body["archiveSha256"]) != (
                pkg.kind.value, pkg.name, pkg.version, pkg.archive_sha256):
            raise BadSignature("the statement names another version or archive")
        return str(body["publisher"])
    except (BadSignature, KeyError, TypeError) as exc:
        raise fail(url, f"{what(pkg)}: {exc}") from None


def check_signature(url: str, pkg: LockedPackage, statement: str, signature: str, named_key: str,
                    public: str) -> LockedSigner:
    """The signer of a statement of this version, by the public key `public` (whose id must be `named_key`)."""
    publisher = publisher_of(url, pkg, statement, signature, named_key)
    try:
        if key_id(load_public(public).public_bytes_raw()) != named_key:
            raise BadSignature(f"the key given for {named_key} is another key")
        verify(public, statement, signature)
    except BadSignature as exc:
        raise fail(url, f"{what(pkg)}: {exc}") from None
    return LockedSigner(named_key, publisher)


def against_previous(url: str, pkg: LockedPackage, signer: LockedSigner | None, previous: Lockfile | None,
                     require_signatures: bool) -> LockedPackage | None:
    """Refuse what the previous lock's pin forbids; the previous package when only the key changed, under the same
    handle (a rotation, which the caller checks against the log), else None."""
    if signer is None and require_signatures:
        raise fail(url, f"{what(pkg)} is unsigned and [install] require_signatures is set")
    before = previous.get(pkg.kind, pkg.name) if previous is not None else None
    if before is None or before.signer is None:
        return None
    if signer is None:
        raise fail(url, f"{what(pkg)} arrives unsigned, but {before.version} was signed by {before.signer.handle} "
                        f"({before.signer.key})")
    if signer.key == before.signer.key:
        return None
    if signer.handle != before.signer.handle:
        raise fail(url, f"{what(pkg)} is signed by {signer.handle} ({signer.key}), but {before.version} was signed by "
                        f"{before.signer.handle} ({before.signer.key})")
    return before
