"""RFC 6962 / RFC 9162 Merkle tree hashes, inclusion and consistency proofs, and their checks (no I/O)."""

from __future__ import annotations

from collections.abc import Sequence

from strawpot.model.sha import sha256


class ProofFailed(ValueError):
    """An inclusion or consistency proof that does not prove what it claims."""


def leaf_hash(entry: bytes) -> bytes:
    """SHA-256(0x00 || entry)."""
    return sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right)."""
    return sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root(leaves: Sequence[bytes]) -> bytes:
    """MTH over leaf hashes; the empty tree's root is SHA-256 of nothing."""
    if not leaves:
        return sha256(b"").digest()
    level = list(leaves)
    # bottom-up pairing gives the same tree as RFC 6962's left-heavy split
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PATH(index, leaves) of RFC 6962 section 2.1.1."""
    if not 0 <= index < len(leaves):
        raise ValueError(f"index {index} is outside a tree of size {len(leaves)}")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(index, leaves[:k]), root(leaves[k:])]
    return [*inclusion_proof(index - k, leaves[k:]), root(leaves[:k])]


def consistency_proof(first: int, leaves: Sequence[bytes]) -> list[bytes]:
    """PROOF(first, leaves) of RFC 6962 section 2.1.2 (empty when first is 0 or the whole tree)."""
    if not 0 <= first <= len(leaves):
        raise ValueError(f"size {first} is outside a tree of size {len(leaves)}")
    if first in (0, len(leaves)):
        return []
    return _subproof(first, leaves, True)


def _subproof(m: int, leaves: Sequence[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [root(leaves)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], whole), root(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), root(leaves[:k])]


def check_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], expected_root: bytes) -> None:
    """RFC 9162 section 2.1.3.2; raises ProofFailed."""
    if not 0 <= index < size:
        raise ProofFailed(f"log index {index} is outside the tree of size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofFailed(f"the inclusion proof of log index {index} is too long")
        if fn % 2 == 1 or fn == sn:
            r = node_hash(p, r)
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or r != expected_root:
        raise ProofFailed(f"log index {index} is not included in the tree of size {size}")


def _trivial(first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]) -> bool:
    """Check the cases without a path to walk; True when one of them settled it."""
    if first > second:
        raise ProofFailed(f"the tree shrank from size {first} to {second}")
    if first == second:
        if proof or first_root != second_root:
            raise ProofFailed(f"two different trees of the same size {first}")
        return True
    if first == 0:
        if proof:
            raise ProofFailed("a consistency proof from the empty tree must be empty")
        return True
    return False


def check_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                      proof: Sequence[bytes]) -> None:
    """RFC 9162 section 2.1.4.2: the tree of size `second` extends the one of size `first`; raises ProofFailed."""
    if _trivial(first, second, first_root, second_root, proof):
        return
    path = list(proof)
    if first & (first - 1) == 0:  # a power of two: the first tree is a subtree
        path.insert(0, first_root)
    if not path:
        raise ProofFailed(f"an empty consistency proof between sizes {first} and {second}")
    fn, sn = first - 1, second - 1
    while fn % 2 == 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofFailed(f"the consistency proof between sizes {first} and {second} is too long")
        if fn % 2 == 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0 or fr != first_root or sr != second_root:
        raise ProofFailed(f"the tree of size {second} does not extend the one of size {first} (a forked or rewritten log)")
