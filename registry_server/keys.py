"""Publisher keys of an account: register, list, revoke (each change appended to the transparency log)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.account import current_user
from registry_server.errors import ApiError
from registry_server.requests import json_body, text_field
from registry_server.state import registry
from registry_server.storage.base import KeyConflict
from strawpot.model.provenance import BadSignature, key_id, load_public


async def register(request: Request) -> JSONResponse:
    user = await current_user(request)
    body = await json_body(request)
    public = text_field(body, "publicKey")
    try:
        fingerprint = key_id(load_public(public).public_bytes_raw())
    except BadSignature as exc:
        raise ApiError(400, f"publicKey: {exc} (send the base64 of the 32 raw bytes)") from None
    try:
        record = await run_in_threadpool(registry(request).storage.add_key, user, fingerprint, public)
    except KeyConflict as exc:
        raise ApiError(409, str(exc)) from None
    return JSONResponse(record.to_json(), status_code=201)


async def list_keys(request: Request) -> JSONResponse:
    handle = request.path_params["handle"]
    if log := request.query_params.get("log"):  # a mirror's upstream's keys (registry_server/mirror/logs.py)
        from registry_server.mirror.logs import forwarded

        return await forwarded(request, log, lambda client, via: client.user_keys(handle, via))
    storage = registry(request).storage
    if await run_in_threadpool(storage.user_by_handle, handle) is None:
        raise ApiError(404, f"user {handle!r} not found")
    keys = await run_in_threadpool(storage.keys_of, handle)
    return JSONResponse({"handle": handle, "keys": [k.to_json() for k in keys]})


async def revoke(request: Request) -> JSONResponse:
    user = await current_user(request)
    body = await json_body(request)
    wanted = text_field(body, "keyId")
    record = await run_in_threadpool(registry(request).storage.revoke_key, user, wanted)
    if record is None:
        raise ApiError(404, f"{user.handle} has no live key {wanted!r}")
    return JSONResponse(record.to_json())
