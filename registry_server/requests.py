"""Small request helpers shared by the handlers: JSON bodies and fields, integer query parameters, ETags.

Every JSON the server reads (a request body, the `dependencies` form field of a publish) goes through
`parse_json`, which measures the nesting depth with a scan of the text before `json.loads` recurses
into it. The body's size is bounded before it is read, by `registry_server.limits.RequestLimits`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request

from registry_server.errors import ApiError

MAX_JSON_DEPTH = 32
# A string (to its closing quote, or to the end when it has none) or a bracket; matched left to right in
# one pass, each byte looked at once, so no input makes the scan slower than linear.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+"?|[\[\]{}]', re.DOTALL)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw` (strings skipped), without parsing it."""
    depth = deepest = 0
    for token in _TOKEN.findall(raw):
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


def parse_json(raw: bytes | str, what: str) -> Any:
    """`raw` parsed as JSON; ApiError 400 naming `what` when it is malformed or nested too deep."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if json_depth(data) > MAX_JSON_DEPTH:
        raise ApiError(400, f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"{what}: not valid JSON ({exc.msg} at position {exc.pos})") from None
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"{what}: not UTF-8 text (byte {exc.start})") from None
    except (RecursionError, ValueError) as exc:  # unreachable after the depth scan; never a 500 all the same
        raise ApiError(400, f"{what}: not valid JSON ({type(exc).__name__})") from None


async def json_body(request: Request, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object; 400 when it is malformed, too deep or not an object."""
    raw = await request.body()
    if not raw.strip() and optional:
        return {}
    data = parse_json(raw, "request body")
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
