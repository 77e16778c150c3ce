"""The RFC 6962 tree: every inclusion and consistency proof of small trees checks, and a changed byte fails."""

from __future__ import annotations

import pytest

from strawpot.model.merkle import (
    ProofFailed,
    check_consistency,
    check_inclusion,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
)

LEAVES = [leaf_hash(f"entry {i}".encode()) for i in range(17)]


def test_root_matches_the_rfc_split_definition() -> None:
    a, b, c = LEAVES[:3]
    assert root([a]) == a
    assert root([a, b, c]) == node_hash(node_hash(a, b), c)
    assert root(LEAVES[:5]) == node_hash(root(LEAVES[:4]), LEAVES[4])


@pytest.mark.parametrize("size", range(1, 18))
def test_every_inclusion_proof_checks_and_a_wrong_leaf_fails(size: int) -> None:
    tree = LEAVES[:size]
    top = root(tree)
    for i in range(size):
        proof = inclusion_proof(i, tree)
        check_inclusion(i, size, tree[i], proof, top)
        with pytest.raises(ProofFailed):
            check_inclusion(i, size, leaf_hash(b"other"), proof, top)
        if proof:
            with pytest.raises(ProofFailed):
                check_inclusion(i, size, tree[i], proof[:-1], top)


@pytest.mark.parametrize("second", range(1, 18))
def test_every_consistency_proof_checks_and_a_fork_fails(second: int) -> None:
    new = LEAVES[:second]
    for first in range(1, second + 1):
        proof = consistency_proof(first, new)
        check_consistency(first, second, root(LEAVES[:first]), root(new), proof)
        forked = [*LEAVES[: first - 1], leaf_hash(b"forked")]
        with pytest.raises(ProofFailed):
            check_consistency(first, second, root(forked), root(new), proof)


def test_a_shrunk_tree_fails() -> None:
    with pytest.raises(ProofFailed, match="shrank"):
        check_consistency(5, 4, root(LEAVES[:5]), root(LEAVES[:4]), [])
