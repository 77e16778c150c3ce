"""The transparency log's endpoints: the signed tree head, entries, inclusion and consistency proofs.

The registry's own Ed25519 key signs each tree head; it is made on first start and kept in the database (one
winner when several workers start at once), so every worker signs with the same key. docs/registry-api.md.
"""

from __future__ import annotations

import base64
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.errors import ApiError
from registry_server.requests import int_param, json_body
from registry_server.state import registry
from registry_server.storage.base import Storage
from strawpot.model import merkle
from strawpot.model.log_entries import head_body
from strawpot.model.provenance import key_id, load_private, private_b64, public_b64

MAX_ENTRIES = 1000
_NO_STORE = {"Cache-Control": "no-store"}


def log_key(storage: Storage) -> Ed25519PrivateKey:
    return load_private(storage.registry_key(lambda: private_b64(Ed25519PrivateKey.generate())), "the registry database")


def signed_head(storage: Storage) -> dict[str, object]:
    """{size, rootHash, time, keyId, publicKey, signature}: the signature covers canonical {rootHash, size, time}."""
    key = log_key(storage)
    size = storage.log_size()
    root = merkle.root(storage.log_leaves(size)).hex()
    stamp = int(time.time() * 1000)
    head = {"size": size, "rootHash": root, "time": stamp}
    signature = base64.b64encode(key.sign(head_body(size, root, stamp))).decode()
    return {**head, "keyId": key_id(key.public_key()), "publicKey": public_b64(key), "signature": signature}


async def head(request: Request) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(signed_head, registry(request).storage), headers=_NO_STORE)


def _size(storage: Storage, request: Request, name: str) -> int:
    current = storage.log_size()
    size = int_param(request, name, current, -1, 1 << 62)
    if not 0 <= size <= current:
        raise ApiError(400, f"{name}={size} is outside the log, whose size is {current}")
    return size


async def entries(request: Request) -> JSONResponse:
    storage = registry(request).storage
    start = int_param(request, "start", 0, 0, 1 << 62)
    end = int_param(request, "end", start + MAX_ENTRIES, 0, 1 << 62)
    texts = await run_in_threadpool(storage.log_entries, start, min(end, start + MAX_ENTRIES))
    return JSONResponse({"start": start, "entries": texts})


def _inclusion(storage: Storage, request: Request) -> dict[str, object]:
    size = _size(storage, request, "size")
    index = int_param(request, "index", -1, -1, 1 << 62)
    if not 0 <= index < size:
        raise ApiError(400, f"index={index} is outside a tree of size {size}")
    leaves = storage.log_leaves(size)
    return {"index": index, "size": size, "leafHash": leaves[index].hex(),
            "proof": [p.hex() for p in merkle.inclusion_proof(index, leaves)]}


def _consistency(storage: Storage, request: Request) -> dict[str, object]:
    second = _size(storage, request, "second")
    first = int_param(request, "first", -1, -1, 1 << 62)
    if not 0 <= first <= second:
        raise ApiError(400, f"first={first} must be between 0 and second={second}")
    return {"first": first, "second": second,
            "proof": [p.hex() for p in merkle.consistency_proof(first, storage.log_leaves(second))]}


async def inclusion(request: Request) -> JSONResponse:
    return JSONResponse(await run_in_threadpool(_inclusion, registry(request).storage, request))


async def consistency(request: Request) -> JSONResponse:
    if log := request.query_params.get("log"):  # a mirror's upstream's log (registry_server/mirror/logs.py)
        from registry_server.mirror.logs import forwarded

        first = int_param(request, "first", -1, -1, 1 << 62)
        second = int_param(request, "second", -1, -1, 1 << 62)
        return await forwarded(request, log, lambda client, via: client.log_consistency(first, second, via))
    return JSONResponse(await run_in_threadpool(_consistency, registry(request).storage, request))


def _proofs(storage: Storage, size: int, indexes: list[int]) -> dict[str, object]:
    current = storage.log_size()
    if not 0 <= size <= current:
        raise ApiError(400, f"size={size} is outside the log, whose size is {current}")
    bad = [i for i in indexes if not 0 <= i < size]
    if bad:
        raise ApiError(400, f"index {bad[0]} is outside a tree of size {size}")
    leaves = storage.log_leaves(size)
    out = []
    for index in sorted(set(indexes)):
        (text,) = storage.log_entries(index, index + 1)
        out.append({"index": index, "entry": text, "proof": [p.hex() for p in merkle.inclusion_proof(index, leaves)]})
    return {"size": size, "entries": out}


def _head_and_proofs(storage: Storage, indexes: list[int]) -> dict[str, object]:
    head = signed_head(storage)
    size = head["size"]
    assert isinstance(size, int)
    return {**_proofs(storage, size, indexes), "head": head}


async def proofs(request: Request) -> JSONResponse:
    """`POST /log/proofs {size?, indexes}`: each entry's text and inclusion proof in one answer (an install's
    batch); without `size`, at the current signed head, which the answer carries as `head`."""
    body = await json_body(request)
    size, indexes = body.get("size"), body.get("indexes")
    if (size is not None and not isinstance(size, int)) or not isinstance(indexes, list) \
            or not all(isinstance(i, int) for i in indexes):
        raise ApiError(400, "send {\"size\": N, \"indexes\": [i, ...]} (integers; size optional)")
    if len(indexes) > MAX_ENTRIES:
        raise ApiError(400, f"at most {MAX_ENTRIES} indexes per request, got {len(indexes)}")
    if isinstance(log := body.get("log"), str):  # a mirror's upstream's log (registry_server/mirror/logs.py)
        from registry_server.mirror.logs import forwarded

        return await forwarded(request, log, lambda client, via: client.log_proofs(size, indexes, via))
    storage = registry(request).storage
    if size is None:
        return JSONResponse(await run_in_threadpool(_head_and_proofs, storage, indexes), headers=_NO_STORE)
    return JSONResponse(await run_in_threadpool(_proofs, storage, size, indexes))
