"""Check a fresh resolution's provenance against the registry's transparency log and fill the lock's signers.

For the registry packages of a new lock: the log's signed tree head (its key pinned on first use, or given as
`[install] log_key`), its consistency with the last head this machine saw for that registry (kept in the cache
folder), each package's log entry and inclusion proof (one batched request), and each signed statement against
the publisher's registered keys. What was checked is kept in the cache folder (provenance_kept.py), from which an
`--offline` resolution checks the same. Any failure is an IntegrityFailure (exit 5, one line); nothing is written then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strawpot.install.provenance_checks import (
    against_previous,
    check_entry,
    check_head,
    check_signature,
    fail,
    publisher_of,
    read_json,
    state_path,
    what,
)
from strawpot.install.provenance_kept import Kept, check_kept, keep, load_kept
from strawpot.model import merkle
from strawpot.model.errors import RegistryUnreachable
from strawpot.model.fs import atomic_write
from strawpot.model.lockfile import LockedPackage, LockedSigner, Lockfile
from valueclass import Record, replace

if TYPE_CHECKING:
    from hub_client import HubClient, VersionInfo
    from strawpot.install.resolve import Resolution
    from strawpot.model.settings import Settings

__all__ = ["Ahead", "Policy", "check_resolution", "state_path", "verify_lock", "verify_offline"]


class Policy(Record):
    require_signatures: bool = False
    log_key: str | None = None  # the registry's log key (base64), pinned by settings instead of on first use


def _consistent(client: HubClient, url: str, seen: dict[str, Any], size: int, root: bytes, log: str | None) -> None:
    try:
        old, old_root = int(seen["size"]), bytes.fromhex(str(seen["root_hash"]))
    except (KeyError, TypeError, ValueError):
        raise fail(url, "the last tree head seen is unreadable in the cache folder") from None
    if size < old:
        raise fail(url, f"the log shrank from {old} entries (seen before) to {size}: it was rolled back")
    proof = [] if size == old or old == 0 else client.log_consistency(old, size, log).get("proof", [])
    try:
        merkle.check_consistency(old, size, old_root, root, [bytes.fromhex(p) for p in proof])
    except (merkle.ProofFailed, ValueError) as exc:
        raise fail(url, str(exc)) from None


class Ahead:
    """The log's signed head with the inclusion proofs of a set of versions, and their publishers' keys, asked for
    while resolution still runs (the likely versions, as the speculator learns them), so the check after it
    waits for no round trip of its own. Used only where it covers what the check needs; else asked again."""

    def __init__(self, client: HubClient, infos: Iterable[VersionInfo]) -> None:
        own = [info for info in infos if info.log is None]  # a mirror's upstream log is asked for separately
        self.indexes = frozenset(info.log_index for info in own if info.log_index is not None)
        self.proofs = client.submit(client.log_proofs, None, sorted(self.indexes)) if self.indexes else None
        self.keys = {name: client.submit(client.user_keys, name, None) for name in _publishers(own)}


def verify_lock(client: HubClient, registry: str, lock: Lockfile, infos: Mapping[tuple[str, str], VersionInfo],
                previous: Lockfile | None, cache: Path, policy: Policy,
                log: str | None = None, ahead: Ahead | None = None) -> tuple[Lockfile, list[str]]:
    """The lock with each registry package's signer and log index, all checked, and notes of key rotations;
    IntegrityFailure otherwise. With `log`, the packages a mirror serves from the upstream at that URL, checked
    against that upstream's log (through the mirror), whose head is pinned and kept under its own URL. `ahead`:
    the requests made while resolving (for the registry's own log)."""
    url = log or registry
    infos = {k: v for k, v in infos.items() if v.log == log}
    todo = [p for p in lock.packages if (p.kind.value, p.name) in infos and p.archive_sha256 is not None]
    logged = [p for p in todo if infos[(p.kind.value, p.name)].log_index is not None]
    if not logged:  # a registry without a log
        if policy.require_signatures and todo:
            raise fail(url, f"{what(todo[0])} is unsigned and [install] require_signatures is set")
        return lock, []
    path = state_path(cache, url)
    seen = read_json(path)
    pinned = policy.log_key or (seen or {}).get("public_key")
    # the publishers' keys travel beside the one request for the head, the entries and their proofs
    early = ahead if ahead is not None and log is None else None
    keys = {name: early.keys[name] if early is not None and name in early.keys else
            client.submit(client.user_keys, name, log) for name in _publishers(infos.values())}
    indexes = sorted({int(infos[(p.kind.value, p.name)].log_index or 0) for p in logged})
    answer = _proofs(client, url, indexes, log, early)
    head = answer.get("head")
    size, root, public = check_head(head, url, pinned if isinstance(pinned, str) else None)
    if answer.get("size") != size:
        raise fail(url, f"the proofs are for a tree of size {answer.get('size')}, not the signed {size}")
    if seen is not None and seen.get("public_key") == public:
        _consistent(client, url, seen, size, root, log)
    entries = {int(e["index"]): e for e in answer.get("entries", []) if isinstance(e, dict)}
    updated, kept, notes = [], [], []
    for pkg in lock.packages:
        info = infos.get((pkg.kind.value, pkg.name))
        if info is None or pkg.archive_sha256 is None:  # not in `todo` (asked of the list: quadratic)
            updated.append(pkg)
            continue
        signer, record, key = _check(url, pkg, info, entries, (size, root, head), keys)
        rotated = against_previous(url, pkg, signer, previous, policy.require_signatures)
        if rotated is not None and signer is not None:
            notes.append(_rotation(client, url, pkg, signer, rotated, key, (size, root), log))
        kept.extend([record] if record is not None else [])
        updated.append(replace(pkg, signer=signer, log_index=info.log_index, log=log))
    keep(cache, url, kept)
    atomic_write(path, json.dumps({"registry": url, "public_key": public, "size": size, "root_hash": root.hex()}),
                 durable=False)
    return replace(lock, packages=tuple(updated)), notes


def _proofs(client: HubClient, url: str, indexes: list[int], log: str | None, ahead: Ahead | None = None) -> dict[str, Any]:
    """The signed head, and the entries and inclusion proofs of `indexes`; a registry that refuses to prove an index
    it gave a version (outside its tree: rolled back, or never logged) fails the check. The answer asked for
    `ahead` serves when it covers `indexes`; when it failed, the request is made again (it may have named a
    version the resolution did not choose)."""
    from hub_client import ServerError
    from strawpot.model.display import short_text, terminal_safe

    if ahead is not None and ahead.proofs is not None and ahead.indexes.issuperset(indexes):
        try:
            return ahead.proofs.result()
        except Exception:  # noqa: BLE001 - asked again below, where each failure has its answer
            pass
    try:
        return client.log_proofs(None, indexes, log)
    except ServerError as exc:
        said = short_text(terminal_safe(exc.message).replace("\n", " "))
        if log is not None and exc.status >= 500:  # the mirror cannot reach its upstream: nothing to check with
            raise RegistryUnreachable(f"cannot check the provenance of the packages the registry mirrors from {url}: "
                                      f"{said}", hint="install from the lock (it needs no check), or retry once the "
                                                      "mirror's upstream answers") from None
        if exc.status != 400:
            raise
        raise fail(url, f"the log cannot prove the entries its versions name (it answered: {said})") from None


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


def _check(url: str, pkg: LockedPackage, info: VersionInfo, entries: dict[int, Any], tree: tuple[int, bytes, Any],
           keys: Mapping[str, Future[dict[str, Any]]]) -> tuple[LockedSigner | None, Kept | None, dict[str, Any]]:
    """The signer of one version (None: unsigned), the record to keep of it, and its key as the registry lists it."""
    size, root, head = tree
    if info.log_index is None:
        # published before the registry kept a log, or mirrored from an upstream (whose log is not this one's):
        # unsigned as far as this registry can prove; `against_previous` refuses it where a signer was pinned
        if info.provenance is not None:
            raise fail(url, f"{what(pkg)} carries a signed statement but no log entry")
        return None, None, {}
    found = entries.get(info.log_index)
    if found is None:
        raise fail(url, f"the log entry {info.log_index} of {what(pkg)} is missing")
    prov = info.provenance
    text, proof = str(found.get("entry", "")), found.get("proof", [])
    entry = check_entry(url, pkg, info.log_index, size, root, text, proof, None if prov is None else prov.statement,
                        None if prov is None else prov.key_id)
    kept = Kept(info.log_index, text, tuple(str(p) for p in proof), dict(head))
    if prov is None:
        return None, kept, {}
    publisher = publisher_of(url, pkg, prov.statement, prov.signature, prov.key_id)
    listed = keys[publisher].result().get("keys", []) if publisher in keys else []
    key = next((k for k in listed if isinstance(k, dict) and k.get("keyId") == prov.key_id), None)
    if key is None:
        raise fail(url, f"{what(pkg)}: the key {prov.key_id} is not registered to {publisher}")
    revoked, published = key.get("revokedAt"), entry.get("time")
    if isinstance(revoked, int) and (not isinstance(published, int) or revoked <= published):
        raise fail(url, f"{what(pkg)}: the key {prov.key_id} was revoked by {publisher} before this version was "
                        f"published")
    signer = check_signature(url, pkg, prov.statement, prov.signature, prov.key_id, str(key.get("publicKey")))
    return signer, replace(kept, statement=prov.statement, signature=prov.signature,
                                       key_id=prov.key_id, public_key=str(key.get("publicKey"))), key


def _rotation(client: HubClient, url: str, pkg: LockedPackage, signer: LockedSigner, before: LockedPackage,
              key: dict[str, Any], tree: tuple[int, bytes], log: str | None) -> str:
    """A new key of the same publisher is accepted when the signed log holds its registration to that publisher;
    the note the install prints."""
    (size, root), index = tree, key.get("logIndex")
    old = before.signer.key if before.signer is not None else "?"
    refuse = f"{what(pkg)} is signed by {signer.handle}'s key {signer.key}, not the {old} {before.version} was signed by"
    if not isinstance(index, int):
        raise fail(url, f"{refuse}, and the log holds no registration of the new key")
    found = next((e for e in client.log_proofs(size, [index], log).get("entries", [])
                  if isinstance(e, dict) and e.get("index") == index), {})
    text = str(found.get("entry", ""))
    try:
        merkle.check_inclusion(index, size, merkle.leaf_hash(text.encode()),
                               [bytes.fromhex(str(p)) for p in found.get("proof", [])], root)
        entry = json.loads(text)
    except (merkle.ProofFailed, ValueError, TypeError):
        raise fail(url, f"{refuse}, and the log entry {index} meant to register the new key is not in the log") from None
    if not isinstance(entry, dict) or (entry.get("type"), entry.get("handle"), entry.get("keyId")) != (
            "key-add", signer.handle, signer.key):
        raise fail(url, f"{refuse}, and the log entry {index} does not register the new key to {signer.handle}")
    return (f"{what(pkg)} is signed by a new key of {signer.handle}, {signer.key} (registered in log entry {index}); "
            f"{before.version} was signed by {old}: the lock now pins the new key")


def verify_offline(url: str, lock: Lockfile, infos: Mapping[tuple[str, str], VersionInfo],
                   previous: Lockfile | None, cache: Path, policy: Policy) -> Lockfile:
    """`verify_lock` of a resolution from the cache, by what the online checks kept; RegistryUnreachable (exit 6)
    when something to check was never kept."""
    logs: dict[str, tuple[dict[str, Any] | None, dict[int, Kept]]] = {}
    updated = []
    for pkg in lock.packages:
        info = infos.get((pkg.kind.value, pkg.name))
        if info is None or pkg.archive_sha256 is None:
            updated.append(pkg)
            continue
        signer, where = None, info.log or url
        if where not in logs:
            seen = read_json(state_path(cache, where))
            logs[where] = seen, load_kept(cache, where) if seen is not None else {}
        seen, records = logs[where]
        if info.log_index is not None:
            kept = records.get(info.log_index)
            if kept is None or seen is None:
                raise RegistryUnreachable(f"cannot check the provenance of {what(pkg)} offline: no proof of it is "
                                          "kept in the cache folder", hint="install once online, then offline")
            signer = check_kept(where, pkg, kept, seen, None if info.log else policy.log_key)
        elif info.provenance is not None:
            raise fail(url, f"{what(pkg)} carries a signed statement but no log entry")
        if against_previous(url, pkg, signer, previous, policy.require_signatures) is not None:
            raise fail(url, f"{what(pkg)} is signed by a new key of its publisher; the rotation is checked against "
                            "the registry's log, online")
        updated.append(replace(pkg, signer=signer, log_index=info.log_index, log=info.log))
    return replace(lock, packages=tuple(updated))


def check_resolution(client: HubClient, url: str, resolution: Resolution, previous: Lockfile | None,
                     settings: Settings, ahead: Ahead | None = None) -> tuple[Lockfile, list[str]]:
    """`verify_lock` of a fresh resolution (`verify_offline` of one from the cache), by the settings'
    `[install] require_signatures` and `log_key`; `ahead`: its requests made while resolving."""
    from strawpot.config_files import cache_dir

    policy = Policy(bool(settings.get("install.require_signatures")), settings.get("install.log_key"))
    if client.offline:
        return verify_offline(url, resolution.lock, resolution.infos, previous, cache_dir(), policy), []
    lock, notes = verify_lock(client, url, resolution.lock, resolution.infos, previous, cache_dir(), policy,
                              ahead=ahead)
    # a mirror's packages from upstream: upstream's log (its own head pinned), not `[install] log_key`'s registry's
    upstreams = Policy(policy.require_signatures)
    for log in sorted({info.log for info in resolution.infos.values() if info.log is not None}):
        lock, more = verify_lock(client, url, lock, resolution.infos, previous, cache_dir(), upstreams, log)
        notes.extend(more)
    return lock, notes
