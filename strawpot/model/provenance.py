"""Publisher keys and publish statements: Ed25519 over a canonical JSON, shared by the client and the registry.

A statement is the JSON object {type, kind, slug, version, archiveSha256, publisher, source, time} written
canonically (keys sorted, no spaces, UTF-8); its signature is Ed25519 over exactly those bytes, in base64. A key's
id is `ed25519:` + the hex SHA-256 of its 32 raw public bytes. docs/security.md documents the format.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from strawpot.model.errors import UsageError
from strawpot.model.sha import sha256
from valueclass import Record

STATEMENT_TYPE = "strawpot.publish/v1"
KEY_ENV = "STRAWPOT_SIGNING_KEY"  # a base64 private key for CI, instead of the key file
KEY_FILE = "signing-key"  # in the config folder
_FIELDS = ("type", "kind", "slug", "version", "archiveSha256", "publisher", "source", "time")


class BadSignature(ValueError):
    """A statement or signature that is malformed or does not verify."""


# the publish form's fields that carry a signed statement: the statement, its signature, the key that made it
FORM_FIELDS = ("statement", "signature", "keyId")


def canonical(data: Any) -> bytes:
    """The one byte form of a JSON value that is signed and hashed."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def key_id(public: Ed25519PublicKey | bytes) -> str:
    raw = public if isinstance(public, bytes) else public.public_bytes_raw()
    return "ed25519:" + sha256(raw).hexdigest()


def public_b64(private: Ed25519PrivateKey) -> str:
    return base64.b64encode(private.public_key().public_bytes_raw()).decode()


def private_b64(private: Ed25519PrivateKey) -> str:
    return base64.b64encode(private.private_bytes_raw()).decode()


def _raw32(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise BadSignature(f"{what} is not base64") from None
    if len(raw) != 32:
        raise BadSignature(f"{what} is not a 32-byte Ed25519 key")
    return raw


def load_public(text: str) -> Ed25519PublicKey:
    """A base64 raw public key, or BadSignature."""
    return Ed25519PublicKey.from_public_bytes(_raw32(text, "the public key"))


def load_private(text: str, where: str) -> Ed25519PrivateKey:
    try:
        return Ed25519PrivateKey.from_private_bytes(_raw32(text, f"the signing key in {where}"))
    except BadSignature as exc:
        raise UsageError(str(exc), hint="run `strawpot keys generate` for a new one") from None


def key_path(config_dir: Path) -> Path:
    return config_dir / KEY_FILE


def write_private(path: Path, private: Ed25519PrivateKey) -> None:
    """Write the key 0600, created exclusively (an existing file is never replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(private_b64(private) + "\n")


def read_private(path: Path) -> Ed25519PrivateKey | None:
    """The key in `path` (None when absent); a link, or a file others may read or write, is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read the signing key {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd) as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode) or mode & 0o077:
            raise UsageError(
                f"the signing key {path} has loose permissions ({stat.filemode(mode)}): others may read it",
                hint=f"run `chmod 600 {path}`, or generate a new key if it may have leaked",
            )
        return load_private(handle.read(), str(path))


def signing_key(config_dir: Path) -> Ed25519PrivateKey | None:
    """The key publishes sign with: $STRAWPOT_SIGNING_KEY, else the key file; None when neither is set."""
    env = os.environ.get(KEY_ENV)
    if env:
        return load_private(env, f"${KEY_ENV}")
    return read_private(key_path(config_dir))


def statement(*, kind: str, slug: str, version: str, archive_sha256: str, publisher: str,
              source: dict[str, str] | None, time: str) -> dict[str, Any]:
    return {"type": STATEMENT_TYPE, "kind": kind, "slug": slug, "version": version,
            "archiveSha256": archive_sha256, "publisher": publisher, "source": source, "time": time}


def sign(private: Ed25519PrivateKey, body: dict[str, Any]) -> tuple[str, str]:
    """(the canonical statement text, its base64 signature)."""
    text = canonical(body)
    return text.decode("utf-8"), base64.b64encode(private.sign(text)).decode()


class Signed(Record):
    """A statement as received: its text, fields, signature and the key id it names."""

    text: str
    body: dict[str, Any]
    signature: str
    key_id: str


def parse_signed(text: str, signature: str, named_key: str) -> Signed:
    """Check the statement's shape (canonical, the known fields); BadSignature otherwise."""
    try:
        body = json.loads(text)
    except ValueError:
        raise BadSignature("the statement is not JSON") from None
    if not isinstance(body, dict) or tuple(sorted(body)) != tuple(sorted(_FIELDS)):
        raise BadSignature(f"the statement must have exactly the fields {', '.join(_FIELDS)}")
    if body["type"] != STATEMENT_TYPE:
        raise BadSignature(f"the statement type must be {STATEMENT_TYPE!r}")
    if canonical(body).decode("utf-8") != text:
        raise BadSignature("the statement is not in canonical form (sorted keys, no spaces)")
    return Signed(text, body, signature, named_key)


def verify(public_key: str, text: str, signature: str) -> None:
    """Raise BadSignature unless `signature` is the key's Ed25519 signature of `text`."""
    try:
        sig = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        raise BadSignature("the signature is not base64") from None
    try:
        load_public(public_key).verify(sig, text.encode("utf-8"))
    except InvalidSignature:
        raise BadSignature(f"the signature does not verify with key {key_id(_raw32(public_key, 'key'))}") from None
