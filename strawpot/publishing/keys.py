"""The publisher key behind `strawpot keys` and a signed publish: where it lives, and the registry calls."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model.errors import StrawpotError, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from strawpot.publishing.prepare import Upload
    from strawpot.registry_choice import Registry


def key_file() -> Path:
    from strawpot.model.folders import config_dir
    from strawpot.model.provenance import key_path

    return key_path(config_dir())


def current_key() -> Ed25519PrivateKey | None:
    """$STRAWPOT_SIGNING_KEY, else the key file in the config folder; None when there is neither."""
    from strawpot.model.folders import config_dir
    from strawpot.model.provenance import signing_key

    return signing_key(config_dir())


def generate() -> tuple[Path, Ed25519PrivateKey]:
    """A new key written 0600 to the key file; an existing key is never replaced."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from strawpot.model.provenance import write_private

    path = key_file()
    key = Ed25519PrivateKey.generate()
    try:
        write_private(path, key)
    except FileExistsError:
        raise UsageError(f"a signing key exists already at {path}; it is kept",
                         hint="revoke it with `strawpot keys revoke` and remove the file first to make another") from None
    return path, key


def _call(registry: Registry, what: str, run: Any) -> dict[str, Any]:
    import hub_client as hc
    from strawpot.hub import hub_errors, open_client

    with open_client(registry) as client, hub_errors(registry.url):
        try:
            result: dict[str, Any] = run(client)
        except (hc.AuthError, hc.NotFound) as exc:
            raise StrawpotError(f"the registry {registry.url} refused to {what} (HTTP {exc.status}): {exc.message}") from None
        except hc.HubError as exc:
            status = getattr(exc, "status", "?")
            raise StrawpotError(f"the registry {registry.url} refused to {what} (HTTP {status}): {exc}") from None
    return result


def register(registry: Registry, key: Ed25519PrivateKey) -> dict[str, Any]:
    from strawpot.model.provenance import public_b64

    return _call(registry, "register the key", lambda client: client.register_key(public_b64(key)))


def revoke(registry: Registry, key_id: str) -> dict[str, Any]:
    return _call(registry, f"revoke {key_id}", lambda client: client.revoke_key(key_id))


def listed(registry: Registry, handle: str) -> list[dict[str, Any]]:
    answer = _call(registry, f"list the keys of {handle}", lambda client: client.user_keys(handle))
    keys = answer.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
        raise StrawpotError(f"the registry {registry.url} answered the key list without a `keys` list")
    return keys


def source_of(folder: Path) -> dict[str, str] | None:
    """{repository, commit} of the git checkout holding `folder` (the remote `origin`, else the folder); None
    outside git."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    return {"repository": git("remote", "get-url", "origin") or git("rev-parse", "--show-toplevel") or "",
            "commit": commit}


def sign_upload(key: Ed25519PrivateKey, upload: Upload, publisher: str, folder: Path) -> dict[str, str]:
    """The form fields of a signed publish of `upload` (statement, signature, keyId)."""
    import hashlib

    from strawpot.model.archive import build_archive
    from strawpot.model.provenance import FORM_FIELDS, key_id, sign, statement

    archive = build_archive({f.path: f.data for f in upload.files},
                            [f.path for f in upload.files if f.registry_executable])
    body = statement(kind=upload.kind.value, slug=upload.slug, version=upload.version,
                     archive_sha256=hashlib.sha256(archive).hexdigest(), publisher=publisher,
                     source=source_of(folder), time=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    text, signature = sign(key, body)
    return dict(zip(FORM_FIELDS, (text, signature, key_id(key.public_key())), strict=True))


def sign_all(uploads: list[Upload], registry: Registry, folder: Path, *, allow_unsigned: bool) -> str | None:
    """Add the signed statement to each upload's form when a key is configured (the key id, else None);
    `allow_unsigned` adds the publisher's word that an unsigned version after signed ones is meant."""
    from strawpot.model.provenance import key_id
    from strawpot.publishing.account import check_token

    key = current_key()
    if key is None:
        for upload in uploads:
            if allow_unsigned:
                upload.fields["allowUnsigned"] = "true"
        return None
    publisher = str(check_token(registry)["handle"])
    for upload in uploads:
        upload.fields.update(sign_upload(key, upload, publisher, folder))
    return key_id(key.public_key())
