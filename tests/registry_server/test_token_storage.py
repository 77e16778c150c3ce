"""Tokens in every storage: listed by hash (never the token), oldest first, and revoked."""

from __future__ import annotations

from registry_server import create_token
from registry_server.auth import hash_token
from registry_server.storage.base import Storage


def test_list_and_revoke_tokens(storage: Storage) -> None:
    first = create_token(storage, "alice", admin=True)
    second = create_token(storage, "bob")
    listed = storage.list_tokens()
    # oldest first; two made in the same millisecond are ordered by hash
    assert sorted((t.hash, t.handle) for t in listed) == sorted([(hash_token(first), "alice"),
                                                                 (hash_token(second), "bob")])
    assert [t.created_at for t in listed] == sorted(t.created_at for t in listed)
    assert all(t.created_at > 0 for t in listed)
    assert storage.revoke_token(hash_token(second)) is True
    assert storage.user_by_token(hash_token(second)) is None
    assert storage.revoke_token(hash_token(second)) is False
    assert [t.handle for t in storage.list_tokens()] == ["alice"]
    assert storage.user_by_token(hash_token(first)) is not None
