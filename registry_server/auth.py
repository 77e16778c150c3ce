"""Bearer tokens: `sh_` + 40 hex, created locally, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import TYPE_CHECKING

from registry_server.errors import ApiError

if TYPE_CHECKING:
    from registry_server.storage.base import Storage, User

TOKEN_RE = re.compile(r"^sh_[0-9a-f]{40}$")


def new_token() -> str:
    return "sh_" + secrets.token_hex(20)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(storage: Storage, handle: str, *, admin: bool = False) -> str:
    """Create `handle` if needed (made admin with `admin`), store a new token's hash, return the token."""
    user = storage.ensure_user(handle, role="admin" if admin else None)
    token = new_token()
    storage.add_token(user.id, hash_token(token))
    return token


def bearer_user(storage: Storage, authorization: str | None) -> User:
    """The user behind an `Authorization: Bearer sh_...` header; 401 when missing or unknown, 403 when banned."""
    if not authorization:
        raise ApiError(401, "authentication required: send Authorization: Bearer <token>")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not TOKEN_RE.match(token):
        raise ApiError(401, "invalid token: expected Authorization: Bearer sh_<40 hex>")
    user = storage.user_by_token(hash_token(token))
    if user is None:
        raise ApiError(401, "unknown token")
    if user.banned:
        raise ApiError(403, f"user {user.handle!r} is banned")
    return user
