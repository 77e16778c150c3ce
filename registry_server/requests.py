"""Small request helpers shared by the handlers: JSON bodies, integer query parameters, ETags."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from registry_server.errors import ApiError

MAX_JSON_BODY = 64 * 1024


async def json_body(request: Request, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object; 400 when it is malformed or not an object."""
    raw = await request.body()
    if len(raw) > MAX_JSON_BODY:
        raise ApiError(413, f"JSON body larger than {MAX_JSON_BODY} bytes")
    if not raw.strip() and optional:
        return {}
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object")
    return data


def text_field(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f"{key!r} is required and must be a non-empty string")
    return value.strip()


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"query parameter {name!r} must be an integer, got {raw!r}") from None
    return max(low, min(high, value))


def etag_matches(request: Request, etag: str) -> bool:
    """Whether If-None-Match names `etag` (weak comparison, `*` matches)."""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag in tags
