"""Endpoints that act for a user: whoami, stars, delete, yank and the admin actions."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.auth import bearer_user
from registry_server.errors import ApiError
from registry_server.render import user_json
from registry_server.requests import json_body, text_field
from registry_server.state import body_kind, path_kind, registry
from registry_server.storage.base import ROLES, User


async def current_user(request: Request) -> User:
    return await run_in_threadpool(bearer_user, registry(request).storage, request.headers.get("authorization"))


async def whoami(request: Request) -> JSONResponse:
    return JSONResponse(user_json(await current_user(request)))


async def toggle_star(request: Request) -> JSONResponse:
    user = await current_user(request)
    body = await json_body(request)
    kind, slug = body_kind(body.get("kind")), text_field(body, "slug")
    result = await run_in_threadpool(registry(request).storage.toggle_star, user, kind, slug)
    if result is None:
        raise ApiError(404, f"{kind.value} {slug!r} not found")
    starred, count = result
    return JSONResponse({"starred": starred, "stars": count})


async def delete(request: Request) -> JSONResponse:
    kind, slug = path_kind(request), request.path_params["slug"]
    user = await current_user(request)
    if not user.is_moderator:
        raise ApiError(403, "deleting a package needs the moderator or admin role")
    reg = registry(request)
    deleted = await run_in_threadpool(reg.storage.delete_package, kind, slug)
    reg.changed(kind, slug)
    if not deleted:
        raise ApiError(404, f"{kind.value} {slug!r} not found")
    return JSONResponse({"kind": kind.value, "slug": slug, "deleted": True})


async def yank(request: Request) -> JSONResponse:
    kind, slug, version = path_kind(request), request.path_params["slug"], request.path_params["version"]
    user = await current_user(request)
    body = await json_body(request, optional=True)
    yanked = body.get("yanked", True)
    if not isinstance(yanked, bool):
        raise ApiError(400, "'yanked' must be true or false")
    reg = registry(request)
    pkg = await run_in_threadpool(reg.storage.get_package, kind, slug)
    if pkg is None:
        raise ApiError(404, f"{kind.value} {slug!r} not found")
    if pkg.owner.id != user.id and not user.is_admin:
        raise ApiError(403, f"only the owner of {kind.value} {slug!r} or an admin may yank its versions")
    found = await run_in_threadpool(reg.storage.set_yanked, kind, slug, version, yanked)
    reg.changed(kind, slug)
    if not found:
        raise ApiError(404, f"version {version} of {kind.value} {slug!r} not found")
    return JSONResponse({"kind": kind.value, "slug": slug, "version": version, "yanked": yanked})


async def _admin(request: Request) -> User:
    user = await current_user(request)
    if not user.is_admin:
        raise ApiError(403, "this action needs the admin role")
    return user


async def set_role(request: Request) -> JSONResponse:
    await _admin(request)
    body = await json_body(request)
    handle, role = text_field(body, "handle"), text_field(body, "role")
    if role not in ROLES:
        raise ApiError(400, f"role must be one of {', '.join(ROLES)}, got {role!r}")
    user = await run_in_threadpool(registry(request).storage.set_role, handle, role)
    if user is None:
        raise ApiError(404, f"user {handle!r} not found")
    return JSONResponse({"handle": user.handle, "role": user.role})


async def ban_user(request: Request) -> JSONResponse:
    admin = await _admin(request)
    body = await json_body(request)
    handle = text_field(body, "handle")
    blocked, reason = body.get("blocked", True), body.get("reason")
    if not isinstance(blocked, bool) or (reason is not None and not isinstance(reason, str)):
        raise ApiError(400, "'blocked' must be true or false and 'reason' a string")
    if handle == admin.handle:
        raise ApiError(400, "an admin cannot ban themselves")
    user = await run_in_threadpool(registry(request).storage.set_banned, handle, blocked, reason)
    if user is None:
        raise ApiError(404, f"user {handle!r} not found")
    return JSONResponse({"handle": user.handle, "blocked": user.banned})
