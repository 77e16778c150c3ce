"""What an online check keeps of each locked version (statement, key, log entry, inclusion proof, the signed head it
was proven against), one file per log index beside the registry's tree head, so `verify` and `install --offline`
check signers and inclusion with no network."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strawpot.install.provenance_checks import (
    check_entry,
    check_head,
    check_signature,
    fail,
    read_json,
    state_path,
    what,
)
from strawpot.model.errors import IntegrityFailure
from strawpot.model.fs import atomic_write
from strawpot.model.lockfile import LockedPackage, LockedSigner


@dataclass(frozen=True)
class Kept:
    """One version's proof of provenance as the online check accepted it."""

    index: int
    entry: str
    proof: tuple[str, ...]  # hex hashes: the entry's inclusion in `head`
    head: dict[str, Any]  # the signed tree head as served (size, rootHash, time, signature, publicKey)
    statement: str | None = None  # None: an unsigned version (its log entry says so)
    signature: str | None = None
    key_id: str | None = None
    public_key: str | None = None  # the publisher's key, registered to the statement's publisher when checked

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Kept:
        optional = {k: data.get(k) for k in ("statement", "signature", "key_id", "public_key")}
        if not all(v is None or isinstance(v, str) for v in optional.values()):
            raise TypeError("a kept provenance field is not text")
        if not isinstance(data["head"], dict) or not isinstance(data["entry"], str):
            raise TypeError("a kept log entry or head is malformed")
        return cls(int(data["index"]), data["entry"], tuple(str(p) for p in data["proof"]), data["head"], **optional)


def kept_path(cache: Path, url: str, index: int) -> Path:
    return state_path(cache, url).with_suffix("") / f"{index}.json"


def keep(cache: Path, url: str, records: list[Kept]) -> None:
    for record in records:
        atomic_write(kept_path(cache, url, record.index), json.dumps(asdict(record)), durable=False)


def read_kept(cache: Path, url: str, index: int) -> Kept | None:
    """The record of log index `index`; None when absent or unreadable (then nothing can be checked offline)."""
    data = read_json(kept_path(cache, url, index))
    try:
        kept = None if data is None else Kept.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None
    return kept if kept is not None and kept.index == index else None


def check_kept(url: str, pkg: LockedPackage, kept: Kept, seen: dict[str, Any], log_key: str | None) -> LockedSigner | None:
    """Check `pkg` against its kept record, with no network: the head's signature by the pinned log key, the head
    within the last one seen, the entry's inclusion and fields, the statement's signature. The signer, or None."""
    pinned = log_key or seen.get("public_key")
    size, root, _ = check_head(kept.head, url, pinned if isinstance(pinned, str) else None)
    try:
        last, last_root = int(seen["size"]), str(seen["root_hash"])
    except (KeyError, TypeError, ValueError):
        raise fail(url, "the last tree head seen is unreadable in the cache folder") from None
    # each install checked the head it saw against the one before, so a kept head on that chain is in the history of
    # the last one; a larger one, or another of the same size, was never accepted
    if size > last or (size == last and root.hex() != last_root):
        raise fail(url, f"the tree head kept for {what(pkg)} (size {size}) is not one this machine accepted "
                        f"(the last one seen has size {last})")
    check_entry(url, pkg, kept.index, size, root, kept.entry, kept.proof, kept.statement, kept.key_id)
    if kept.statement is None:
        return None
    if kept.signature is None or kept.key_id is None or kept.public_key is None:
        raise fail(url, f"{what(pkg)}: its kept statement has no signature or key")
    return check_signature(url, pkg, kept.statement, kept.signature, kept.key_id, kept.public_key)


@dataclass
class Signers:
    """What `strawpot verify` found of the locked signers, offline."""

    checked: int = 0  # signed versions whose statement, key and log inclusion were checked against the lock
    unsigned: int = 0  # versions locked as unsigned whose log entry says so (or that have none)
    not_kept: list[str] = field(default_factory=list)  # versions nothing was kept of on this machine: not checked

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "unsigned": self.unsigned, "not_checked": self.not_kept}


def verify_signers(packages: tuple[LockedPackage, ...], cache: Path, log_key: str | None) -> Signers:
    """Check each registry package's locked signer and log index against what was kept, with no network;
    IntegrityFailure (exit 5) on the first that does not match."""
    found = Signers()
    try:
        for pkg in packages:
            _verify_one(pkg, cache, log_key, found)
    except IntegrityFailure as exc:
        raise IntegrityFailure(exc.message, hint="the lock, the cache folder or what the registry served changed "
                               "since the install that checked it: find out which before trusting this project") from None
    return found


def _verify_one(pkg: LockedPackage, cache: Path, log_key: str | None, found: Signers) -> None:
    if pkg.archive_sha256 is None:
        return  # a path source: nobody signs it
    url = pkg.source
    if pkg.log_index is None:
        if pkg.signer is not None:
            raise fail(url, f"{what(pkg)}: the lock pins a signer but no log index")
        found.unsigned += 1
        return
    seen = read_json(state_path(cache, url))
    kept = read_kept(cache, url, pkg.log_index) if seen is not None else None
    if kept is None or seen is None:
        found.not_kept.append(what(pkg))
        return
    signer = check_kept(url, pkg, kept, seen, log_key)
    if signer != pkg.signer:
        raise fail(url, f"{what(pkg)}: the lock says {_say(pkg.signer)}, but its log entry and statement say "
                        f"{_say(signer)}")
    found.checked += signer is not None
    found.unsigned += signer is None


def _say(signer: LockedSigner | None) -> str:
    return "unsigned" if signer is None else f"signed by {signer.handle} ({signer.key})"
