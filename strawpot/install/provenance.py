"""Check a fresh resolution's provenance against the registry's transparency log and fill the lock's signers.

For the registry packages of a new lock: the log's signed tree head (its key pinned on first use, or given as
`[install] log_key`), its consistency with the last head this machine saw for that registry (kept in the cache
folder), each package's log entry and inclusion proof (one batched request), and each signed statement against
the publisher's registered keys. Any failure is an IntegrityFailure (exit 5, one line); nothing is written then.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.model import merkle
from strawpot.model.errors import IntegrityFailure
from strawpot.model.fs import atomic_write
from strawpot.model.lockfile import LockedPackage, LockedSigner, Lockfile
from strawpot.model.log_entries import FIELD_WORDS, head_body, publish_fields
from strawpot.model.provenance import BadSignature, key_id, load_public, parse_signed, verify

if TYPE_CHECKING:
    from hub_client import HubClient, VersionInfo
    from strawpot.install.resolve import Resolution
    from strawpot.model.settings import Settings


@dataclasses.dataclass(frozen=True)
class Policy:
    require_signatures: bool = False
    log_key: str | None = None  # the registry's log key (base64), pinned by settings instead of on first use


def _fail(url: str, what: str) -> IntegrityFailure:
    return IntegrityFailure(f"provenance check failed for {url}: {what}",
                            hint="nothing was installed; if the change is expected, find out why before going on")


def state_path(cache: Path, url: str) -> Path:
    return cache / "provenance" / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # a damaged note is learnt again, like a first use
    return data if isinstance(data, dict) else None


def _head(head: Any, url: str, pinned: str | None) -> tuple[int, bytes, str]:
    try:
        size, root, public = int(head["size"]), bytes.fromhex(str(head["rootHash"])), str(head["publicKey"])
        body = head_body(size, str(head["rootHash"]), int(head["time"]))
        load_public(public).verify(base64.b64decode(str(head["signature"])), body)
    except Exception as exc:  # noqa: BLE001 - any malformed or unverifiable head is the same refusal
        raise _fail(url, f"the log's tree head does not verify ({type(exc).__name__})") from None
    if pinned is not None and public != pinned:
        raise _fail(url, f"the log is signed by key {key_id(load_public(public).public_bytes_raw())}, not the pinned "
                         f"{key_id(load_public(pinned).public_bytes_raw())}")
    return size, root, public


def _consistent(client: HubClient, url: str, seen: dict[str, Any], size: int, root: bytes) -> None:
    old, old_root = int(seen["size"]), bytes.fromhex(str(seen["root_hash"]))
    if size < old:
        raise _fail(url, f"the log shrank from {old} entries (seen before) to {size}: it was rolled back")
    proof = [] if size == old or old == 0 else client.log_consistency(old, size).get("proof", [])
    try:
        merkle.check_consistency(old, size, old_root, root, [bytes.fromhex(p) for p in proof])
    except (merkle.ProofFailed, ValueError) as exc:
        raise _fail(url, str(exc)) from None


def verify_lock(client: HubClient, url: str, lock: Lockfile, infos: Mapping[tuple[str, str], VersionInfo],
                previous: Lockfile | None, cache: Path, policy: Policy) -> Lockfile:
    """The lock with each registry package's signer and log index, all checked; IntegrityFailure otherwise."""
    todo = [p for p in lock.packages if (p.kind.value, p.name) in infos and p.archive_sha256 is not None]
    logged = [p for p in todo if infos[(p.kind.value, p.name)].log_index is not None]
    if not logged:  # a registry without a log
        if policy.require_signatures and todo:
            raise _fail(url, f"{todo[0].kind.value} {todo[0].name} is unsigned and [install] require_signatures is set")
        return lock
    path = state_path(cache, url)
    seen = _read_state(path)
    pinned = policy.log_key or (seen or {}).get("public_key")
    # the publishers' keys travel beside the one request for the head, the entries and their proofs
    keys = {name: client.submit(client.user_keys, name) for name in _publishers(infos.values())}
    indexes = sorted({int(infos[(p.kind.value, p.name)].log_index or 0) for p in logged})
    answer = client.log_proofs(None, indexes)
    size, root, public = _head(answer.get("head"), url, pinned if isinstance(pinned, str) else None)
    if answer.get("size") != size:
        raise _fail(url, f"the proofs are for a tree of size {answer.get('size')}, not the signed {size}")
    if seen is not None and seen.get("public_key") == public:
        _consistent(client, url, seen, size, root)
    entries = {int(e["index"]): e for e in answer.get("entries", []) if isinstance(e, dict)}
    updated = []
    for pkg in lock.packages:
        info = infos.get((pkg.kind.value, pkg.name))
        if info is None or pkg not in todo:
            updated.append(pkg)
            continue
        signer = _check(client, url, pkg, info, entries, size, root, keys)
        _against_previous(url, pkg, signer, previous, policy)
        updated.append(dataclasses.replace(pkg, signer=signer, log_index=info.log_index))
    atomic_write(path, json.dumps({"registry": url, "public_key": public, "size": size, "root_hash": root.hex()}),
                 durable=False)
    return dataclasses.replace(lock, packages=tuple(updated))




def _publishers(infos: Iterable[VersionInfo]) -> set[str]:
    """The publishers the signed statements name (a malformed one is refused later, in `_check`)."""
    names = set()
    for info in infos:
        if info.provenance is not None:
            try:
                names.add(str(json.loads(info.provenance.statement)["publisher"]))
            except (ValueError, KeyError, TypeError):
                continue
    return names


def _check(client: HubClient, url: str, pkg: LockedPackage, info: VersionInfo, entries: dict[int, Any],
           size: int, root: bytes, keys: Mapping[str, Future[dict[str, Any]]]) -> LockedSigner | None:
    what = f"{pkg.kind.value} {pkg.name} {pkg.version}"
    if info.log_index is None:
        # published before the registry kept a log, or mirrored from an upstream (whose log is not this one's):
        # unsigned as far as this registry can prove; `_against_previous` refuses it where a signer was pinned
        if info.provenance is not None:
            raise _fail(url, f"{what} carries a signed statement but no log entry")
        return None
    found = entries.get(info.log_index)
    if found is None:
        raise _fail(url, f"the log entry {info.log_index} of {what} is missing")
    text = str(found.get("entry", ""))
    try:
        merkle.check_inclusion(info.log_index, size, merkle.leaf_hash(text.encode()),
                               [bytes.fromhex(p) for p in found.get("proof", [])], root)
        entry = json.loads(text)
    except (merkle.ProofFailed, ValueError) as exc:
        raise _fail(url, f"{what}: {exc}") from None
    prov = info.provenance
    expect = publish_fields(pkg.kind, pkg.name, pkg.version, pkg.archive_sha256,
                            None if prov is None else prov.statement, None if prov is None else prov.key_id)
    wrong = [FIELD_WORDS.get(k, k) for k, v in expect.items() if entry.get(k) != v]
    if wrong:
        raise _fail(url, f"the log entry {info.log_index} does not match {what}: its {', '.join(wrong)} differ")
    if prov is None:
        return None
    try:
        body = parse_signed(prov.statement, prov.signature, prov.key_id).body
        if (body["kind"], body["slug"], body["version"], body["archiveSha256"]) != (
                pkg.kind.value, pkg.name, pkg.version, pkg.archive_sha256):
            raise BadSignature("the statement names another version or archive")
        publisher = str(body["publisher"])
        listed = keys[publisher].result().get("keys", []) if publisher in keys else []
        public = next((str(k["publicKey"]) for k in listed if isinstance(k, dict) and k.get("keyId") == prov.key_id),
                      None)
        if public is None:
            raise BadSignature(f"the key {prov.key_id} is not registered to {publisher}")
        verify(public, prov.statement, prov.signature)
    except (BadSignature, KeyError, TypeError) as exc:
        raise _fail(url, f"{what}: {exc}") from None
    return LockedSigner(prov.key_id, publisher)


def _against_previous(url: str, pkg: LockedPackage, signer: LockedSigner | None, previous: Lockfile | None,
                      policy: Policy) -> None:
    what = f"{pkg.kind.value} {pkg.name} {pkg.version}"
    if signer is None and policy.require_signatures:
        raise _fail(url, f"{what} is unsigned and [install] require_signatures is set")
    before = previous.get(pkg.kind, pkg.name) if previous is not None else None
    if before is None or before.signer is None:
        return
    if signer is None:
        raise _fail(url, f"{what} arrives unsigned, but {before.version} was signed by {before.signer.handle} "
                         f"({before.signer.key})")
    if signer.key != before.signer.key:
        raise _fail(url, f"{what} is signed by {signer.handle} ({signer.key}), but {before.version} was signed by "
                         f"{before.signer.handle} ({before.signer.key})")


def check_resolution(client: HubClient, url: str, resolution: Resolution, previous: Lockfile | None,
                     settings: Settings) -> Lockfile:
    """`verify_lock` of a fresh resolution, by the settings' `[install] require_signatures` and `log_key`."""
    from strawpot.config_files import cache_dir

    policy = Policy(bool(settings.get("install.require_signatures")), settings.get("install.log_key"))
    return verify_lock(client, url, resolution.lock, resolution.infos, previous, cache_dir(), policy)
