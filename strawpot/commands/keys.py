"""`strawpot keys generate|register|list|revoke`: the Ed25519 key publishes are signed with."""

from __future__ import annotations

from typing import TYPE_CHECKING

import rich_click as click

from strawpot.commands._options import json_option, registry_option

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SECTION = "publishing"


@click.group()
def command() -> None:
    """Publisher keys: publishes are signed with yours ($STRAWPOT_SIGNING_KEY, or the key file in the config folder)."""


@command.command("generate")
def generate() -> None:
    """Make a new Ed25519 key, written 0600 to the config folder (an existing key is kept)."""
    from strawpot.console import out_console
    from strawpot.model.provenance import key_id
    from strawpot.publishing.keys import generate as make

    path, key = make()
    out_console.print(f"{key_id(key.public_key())} written to {path}; register it with `strawpot keys register`",
                      markup=False)


def _key() -> Ed25519PrivateKey:
    from strawpot.model.errors import UsageError
    from strawpot.publishing.keys import current_key, key_file

    key = current_key()
    if key is None:
        raise UsageError(f"no signing key: neither $STRAWPOT_SIGNING_KEY nor {key_file()}",
                         hint="make one with `strawpot keys generate`")
    return key


@command.command("register")
@registry_option
@json_option
def register(registry: str | None, as_json: bool) -> None:
    """Add your public key to your account on the registry."""
    from strawpot.commands._options import print_json
    from strawpot.console import out_console
    from strawpot.publishing.auth import registry_for, require_token
    from strawpot.publishing.keys import register as add

    chosen = registry_for(registry)
    require_token(chosen)
    result = add(chosen, _key())
    if as_json:
        print_json({"registry": chosen.url, "key": result})
        return
    out_console.print(f"registered {result.get('keyId')} for {result.get('handle')} on {chosen.url}", markup=False)


@command.command("list")
@click.argument("handle", required=False)
@registry_option
@json_option
def list_keys(handle: str | None, registry: str | None, as_json: bool) -> None:
    """List the keys of HANDLE (default: you) on the registry, revoked ones marked."""
    from strawpot.commands._options import print_json
    from strawpot.console import out_console
    from strawpot.publishing.account import check_token
    from strawpot.publishing.auth import registry_for, require_token
    from strawpot.publishing.keys import listed

    chosen = registry_for(registry)
    if handle is None:
        require_token(chosen)
        handle = str(check_token(chosen)["handle"])
    keys = listed(chosen, handle)
    if as_json:
        print_json({"registry": chosen.url, "handle": handle, "keys": keys})
        return
    for key in keys:
        state = "revoked" if key.get("revokedAt") is not None else "live"
        out_console.print(f"{key.get('keyId')}  {state}", markup=False)
    if not keys:
        out_console.print(f"{handle} has no keys on {chosen.url}", markup=False)


@command.command("revoke")
@click.argument("key_id")
@registry_option
def revoke(key_id: str, registry: str | None) -> None:
    """Revoke KEY_ID on the registry: it signs no new publish from now on."""
    from strawpot.console import out_console
    from strawpot.publishing.auth import registry_for, require_token
    from strawpot.publishing.keys import revoke as drop

    chosen = registry_for(registry)
    require_token(chosen)
    result = drop(chosen, key_id)
    out_console.print(f"revoked {result.get('keyId')} on {chosen.url}", markup=False)
