"""The publish statement check: a signed publish names this upload and verifies with a live key of the publisher.

The form fields `statement`, `signature` and `keyId` carry it (strawpot.model.provenance); `allowUnsigned=true`
is the publisher saying that an unsigned version after signed ones is meant. docs/registry-api.md words the rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from registry_server.errors import ApiError
from registry_server.storage.base import Storage, User
from strawpot.model.kinds import Kind
from strawpot.model.provenance import FORM_FIELDS, BadSignature, parse_signed, verify


@dataclass(frozen=True)
class Checked:
    statement: str | None = None
    signature: str | None = None
    key_id: str | None = None


def check_signature(storage: Storage, kind: Kind, slug: str, version: str, user: User, archive_sha256: str,
                    fields: dict[str, str], *, required: bool) -> Checked:
    """The statement to store with the version (an empty Checked for an allowed unsigned publish), or a 4xx."""
    text, signature, named = (fields.get(name, "").strip() for name in FORM_FIELDS)
    what = f"{kind.value} {slug} {version}"
    if not text:
        if signature or named:
            raise ApiError(400, f"publish of {what} refused: a signature was sent without its statement")
        if required:
            raise ApiError(403, f"publish of {what} refused: this registry takes signed publishes only; "
                                "run `strawpot keys generate` and `strawpot keys register`, then publish again")
        earlier = [r.version for r in storage.versions(kind, slug) or [] if r.statement is not None]
        if earlier and fields.get("allowUnsigned", "").strip().lower() != "true":
            raise ApiError(409, f"publish of {what} refused: version {earlier[-1]} was signed and this upload is not; "
                                "sign it, or publish with --allow-unsigned if dropping the signature is meant")
        return Checked()
    try:
        signed = parse_signed(text, signature, named)
    except BadSignature as exc:
        raise ApiError(400, f"publish of {what} refused: {exc}") from None
    body = signed.body
    claimed = {"kind": kind.value, "slug": slug, "version": version, "archiveSha256": archive_sha256,
               "publisher": user.handle}
    for name, value in claimed.items():
        if body[name] != value:
            raise ApiError(400, f"publish of {what} refused: the statement signs {name} {body[name]!r}, "
                                f"but this upload has {value!r}")
    key = storage.key(named)
    if key is None or key.handle != user.handle:
        raise ApiError(403, f"publish of {what} refused: the key {named or '(none)'} is not registered to "
                            f"{user.handle}; run `strawpot keys register` first")
    if key.revoked_at is not None:
        raise ApiError(403, f"publish of {what} refused: the key {named} was revoked; sign with a live key")
    try:
        verify(key.public_key, text, signature)
    except BadSignature as exc:
        raise ApiError(403, f"publish of {what} refused: {exc}") from None
    return Checked(text, signature, named)
