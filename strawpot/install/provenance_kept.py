"""What an online check keeps of each locked version (statement, key, log entry, inclusion proof, the signed head it
was proven against), in one file per registry beside its tree head, so `verify` and `install --offline` check
signers and inclusion with no network."""

from __future__ import annotations

import json
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
from valueclass import Record, State


class Kept(Record):
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
    def from_json(cls, index: int, data: Any, heads: dict[str, Any]) -> Kept:
        optional = {k: data.get(k) for k in ("statement", "signature", "key_id", "public_key")}
        if not all(v is None or isinstance(v, str) for v in optional.values()):
            raise TypeError("a kept provenance field is not text")
        head = heads.get(str(data["head_size"]))
        if not isinstance(head, dict) or not isinstance(data["entry"], str):
            raise TypeError("a kept log entry or head is malformed")
        return cls(index, data["entry"], tuple(str(p) for p in data["proof"]), head, **optional)

    def to_json(self) -> dict[str, Any]:
        """What `from_json` reads back (the head is kept once per size, beside the records: `head_size` names it).
        Field by field: `dataclasses.asdict` deep-copied the head of every record, 40 ms for 100 packages."""
        return {"entry": self.entry, "proof": list(self.proof), "statement": self.statement,
                "signature": self.signature, "key_id": self.key_id, "public_key": self.public_key,
                "head_size": self.head["size"]}


def kept_path(cache: Path, url: str) -> Path:
    """`{"heads": {size: signed head}, "records": {log index: {entry, proof, head_size, statement, signature,
    key_id, public_key}}}`: one file, rewritten once a resolution (two installs at once may drop each other's new
    records; then a later offline check says they are not kept, and an online install keeps them again)."""
    return state_path(cache, url).with_suffix(".kept.json")


def keep(cache: Path, url: str, records: list[Kept]) -> None:
    if not records:
        return
    path = kept_path(cache, url)
    data = read_json(path) or {}
    heads, kept = data.get("heads"), data.get("records")
    heads, kept = heads if isinstance(heads, dict) else {}, kept if isinstance(kept, dict) else {}
    for record in records:
        heads[str(record.head["size"])] = record.head
        kept[str(record.index)] = record.to_json()
    used = {str(r.get("head_size")) for r in kept.values() if isinstance(r, dict)}
    heads = {size: head for size, head in heads.items() if size in used}
    atomic_write(path, json.dumps({"heads": heads, "records": kept}, separators=(",", ":")), durable=False)


def load_kept(cache: Path, url: str) -> dict[int, Kept]:
    """The records kept for the registry at `url`, by log index; an unreadable one is left out (then that version
    cannot be checked offline, which the callers say)."""
    data = read_json(kept_path(cache, url)) or {}
    heads, records = data.get("heads"), data.get("records")
    if not isinstance(heads, dict) or not isinstance(records, dict):
        return {}
    found = {}
    for key, record in records.items():
        try:
            found[int(key)] = Kept.from_json(int(key), record, heads)
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return found


def check_kept(url: str, pkg: LockedPackage, kept: Kept, seen: dict[str, Any], log_key: str | None,
               heads: dict[int, tuple[int, bytes, str]] | None = None) -> LockedSigner | None:
    """Check `pkg` against its kept record, with no network: the head's signature by the pinned log key, the head
    within the last one seen, the entry's inclusion and fields, the statement's signature. The signer, or None.
    `heads` holds the heads already checked against this `log_key` and `seen`, by the id of their kept dict (the
    caller keeps every one alive): the versions of one install share one head, checked once."""
    pinned = log_key or seen.get("public_key")
    checked = heads.get(id(kept.head)) if heads is not None else None
    if checked is None:
        checked = check_head(kept.head, url, pinned if isinstance(pinned, str) else None)
        if heads is not None:
            heads[id(kept.head)] = checked
    size, root, _ = checked
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


class Signers(State):
    """What `strawpot verify` found of the locked signers, offline."""

    _fields = ("checked", "unsigned", "not_kept")

    def __init__(self) -> None:
        self.checked = 0  # signed versions whose statement, key and log inclusion were checked against the lock
        self.unsigned = 0  # versions locked as unsigned whose log entry says so (or that have none)
        self.not_kept: list[LockedPackage] = []  # nothing was kept of these here: not checked

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "unsigned": self.unsigned, "not_checked": [
            {"kind": p.kind.value, "name": p.name, "version": p.version} for p in self.not_kept]}


def verify_signers(packages: tuple[LockedPackage, ...], cache: Path, log_key: str | None) -> Signers:
    """Check each registry package's locked signer and log index against what was kept, with no network;
    IntegrityFailure (exit 5) on the first that does not match."""
    found = Signers()
    loaded: dict[str, tuple[dict[str, Any] | None, dict[int, Kept]]] = {}
    heads: dict[tuple[str, bool], dict[int, tuple[int, bytes, str]]] = {}  # by registry and whether log_key applies
    try:
        for pkg in packages:
            where = pkg.log or pkg.source
            if where not in loaded:
                loaded[where] = (read_json(state_path(cache, where)), load_kept(cache, where))
            _verify_one(pkg, *loaded[where], None if pkg.log else log_key, found,
                        heads.setdefault((where, not pkg.log), {}))
    except IntegrityFailure as exc:
        raise IntegrityFailure(exc.message, hint="the lock, the cache folder or what the registry served changed "
                               "since the install that checked it: find out which before trusting this project") from None
    return found


def _verify_one(pkg: LockedPackage, seen: dict[str, Any] | None, records: dict[int, Kept], log_key: str | None,
                found: Signers, heads: dict[int, tuple[int, bytes, str]]) -> None:
    if pkg.archive_sha256 is None:
        return  # a path source: nobody signs it
    url = pkg.log or pkg.source
    if pkg.log_index is None:
        if pkg.signer is not None:
            raise fail(url, f"{what(pkg)}: the lock pins a signer but no log index")
        found.unsigned += 1
        return
    kept = records.get(pkg.log_index)
    if kept is None or seen is None:
        found.not_kept.append(pkg)
        return
    signer = check_kept(url, pkg, kept, seen, log_key, heads)
    if signer != pkg.signer:
        raise fail(url, f"{what(pkg)}: the lock says {_say(pkg.signer)}, but its log entry and statement say "
                        f"{_say(signer)}")
    found.checked += signer is not None
    found.unsigned += signer is None


def _say(signer: LockedSigner | None) -> str:
    return "unsigned" if signer is None else f"signed by {signer.handle} ({signer.key})"
