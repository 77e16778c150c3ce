"""The OpenAPI 3.1 description served at `GET /api/v1/openapi.json` (written by hand, every endpoint)."""

from __future__ import annotations

from typing import Any

from strawpot.model.kinds import KIND_ORDER

KINDS = [kind.plural for kind in KIND_ORDER]


def _param(name: str, where: str, description: str, *, required: bool = False, schema: str = "string") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path",
            "description": description, "schema": {"type": schema}}


_KINDS = {"name": "kinds", "in": "path", "required": True, "schema": {"type": "string", "enum": KINDS}}
_SLUG = _param("slug", "path", "package slug")
_VERSION = _param("version", "path", "exact semver version")
_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]


def _json(description: str, schema: str | dict[str, Any] = "Object") -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{schema}"} if isinstance(schema, str) else schema
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "invalid request (every problem listed)", 401: "missing or unknown token", 403: "not allowed",
            404: "not found", 408: "request body too slow (a minimum rate per window, a deadline)",
            409: "lost a race with another publish, or the slug was deleted (deletes are final)",
            413: "request body too large", 429: "rate limited (integer Retry-After)",
            503: "no upload slot came free in time (integer Retry-After)"}
    return {str(c): _json(text[c], "Error") for c in codes}


def _op(summary: str, ok: dict[str, Any], *errors: int, params: list[dict[str, Any]] | None = None,
        auth: bool = False, body: dict[str, Any] | None = None, status: str = "200") -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "parameters": params or [],
                          "responses": {status: ok, **_errors(*errors, 429)}}
    if auth:
        op["security"] = _AUTH
    if body:
        op["requestBody"] = body
    return op


def _json_body(properties: dict[str, str], required: list[str]) -> dict[str, Any]:
    props = {k: {"type": t} for k, t in properties.items()}
    return {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": props, "required": required}}}}


_PUBLISH_BODY = {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["slug", "version", "files"],
    "properties": {
        "slug": {"type": "string"}, "version": {"type": "string"}, "changelog": {"type": "string"},
        "displayName": {"type": "string"}, "customTags": {"type": "string", "description": "comma-separated"},
        "dependencies": {"type": "string", "description": "JSON: {\"skills\": [...], \"roles\": [...]}"},
        "statement": {"type": "string", "description": "signed publish statement (canonical JSON)"},
        "signature": {"type": "string"}, "keyId": {"type": "string"}, "allowUnsigned": {"type": "string"},
        "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                  "description": "one part per file, filename = relative POSIX path; the files a package names "
                                 "in metadata.strawpot.bin are stored executable"},
    }}}}}

_BATCH_BODY = {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "description": "member n (0, 1, ... without gaps; at most 50) is the publish form above with "
                                     "every field and file part named `n.<name>`, plus `n.kind`",
    "patternProperties": {
        r"^[0-9]+\.kind$": {"type": "string", "enum": [k.value for k in KIND_ORDER]},
        r"^[0-9]+\.(slug|version|changelog|displayName|customTags|dependencies)$": {"type": "string"},
        r"^[0-9]+\.files$": {"type": "array", "items": {"type": "string", "format": "binary"}},
    }}}}}

_PATHS: dict[str, Any] = {
    "/api/v1/openapi.json": {"get": _op("this document", _json("OpenAPI 3.1"))},
    "/api/v1/advisories": {
        "get": _op("security advisories, oldest first: {format, advisories: [{id, kind, slug, range, severity, "
                   "summary, createdAt}]}", _json("advisories"), 400,
                   params=[_param("kind", "query", "only this kind (skill, role, ...)"),
                           _param("slug", "query", "only this slug")]),
    },
    "/api/v1/{kinds}": {
        "get": _op("list packages", _json("items", "List"), 400, 404, params=[
            _KINDS, _param("limit", "query", "1..200 (default 50)", schema="integer"),
            {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["updated", "downloads", "stars"]}}]),
        "post": _op("publish a version (owner only; every validation problem in one 400)",
                    _json("created", "Published"), 400, 401, 403, 404, 408, 409, 413, 503,
                    params=[_KINDS], auth=True, body=_PUBLISH_BODY, status="201"),
    },
    "/api/v1/{kinds}/{slug}": {
        "get": _op("package detail; ?version= returns that version under latestVersion", _json("detail", "Detail"),
                   404, params=[_KINDS, _SLUG, _param("version", "query", "exact version")]),
        "delete": _op("delete a package (moderator or admin)", _json("deleted"), 401, 403, 404,
                      params=[_KINDS, _SLUG], auth=True),
    },
    "/api/v1/{kinds}/{slug}/file": {
        "get": _op("raw bytes of one file", {"description": "file bytes", "content": {
            "application/octet-stream": {}, "text/plain": {}}}, 404,
            params=[_KINDS, _SLUG, _param("path", "query", "relative path (form-encoded)", required=True),
                    _param("version", "query", "exact version (default latest)")]),
    },
    "/api/v1/{kinds}/{slug}/resolve": {
        "get": _op("transitive dependencies chosen by the PubGrub solver, leaves first, root excluded "
                   "(skills and roles only); a conflict is a 400 with the explanation",
                   _json("resolution", "Resolution"), 400, 404,
                   params=[_KINDS, _SLUG, _param("version", "query", "exact version (default latest)")]),
    },
    "/api/v1/{kinds}/{slug}/versions": {
        "get": _op("every version with dependencies, archive sha256/size, files, yanked flag (ETag, 304)",
                   _json("versions", "Versions"), 404, params=[_KINDS, _SLUG,
                   {"name": "If-None-Match", "in": "header", "schema": {"type": "string"}}]),
    },
    "/api/v1/{kinds}/{slug}/versions/{version}/archive": {
        "get": _op("the immutable deterministic archive (gzip'd tar) of a version",
                   {"description": "archive", "content": {"application/gzip": {}}}, 404,
                   params=[_KINDS, _SLUG, _VERSION]),
    },
    "/api/v1/{kinds}/{slug}/versions/{version}/yank": {
        "post": _op("yank a version, or with {\"yanked\": false} restore it (owner or admin)", _json("yank state"),
                    400, 401, 403, 404, params=[_KINDS, _SLUG, _VERSION], auth=True,
                    body=_json_body({"yanked": "boolean"}, [])),
    },
    "/api/v1/batch": {
        "post": _op("publish several packages all or none, in one transaction: each member checked as a single "
                    "publish is (a dependency may be another member: members that need each other go together), "
                    "every problem of every member in one 400 (`issues` prefixed `kind slug: `), nothing stored "
                    "on any refusal; at most 50 members and 52 MB in all",
                    _json("created: {published: [{kind, slug, version, packageId, versionId}]}"),
                    400, 401, 403, 408, 409, 413, 503, auth=True, body=_BATCH_BODY, status="201"),
    },
    "/api/v1/closure": {
        "post": _op("the versions documents of every package reachable from the roots (through any version, and a "
                    "role's defaultAgent), minus those whose ETag `known` names; at most 1000 packages visited, past "
                    "that `complete` is false and the client asks for the rest per package",
                    _json("closure", "Closure"), 400, 413,
                    body={"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["roots"], "properties": {
                            "roots": {"type": "array", "maxItems": 100, "items": {
                                "type": "object", "required": ["kind", "slug"],
                                "properties": {"kind": {"type": "string"}, "slug": {"type": "string"}}}},
                            "known": {"type": "object", "additionalProperties": {"type": "string"},
                                      "description": "kind:slug -> the ETag of the versions document held"}}}}}}),
    },
    "/api/v1/archives": {
        "post": _op("many archives in one answer: a line of JSON, the index [{kind, slug, version, sha256, size}] "
                    "of what follows, then the archives back to back; unknown items and anything past 64 MB are "
                    "left out (fetch them one at a time); each archive sent counts a download",
                    {"description": "index line + archives", "content": {"application/octet-stream": {}}}, 400, 413,
                    body={"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["items"], "properties": {"items": {
                            "type": "array", "maxItems": 200, "items": {
                                "type": "object", "required": ["kind", "slug", "version"],
                                "properties": {k: {"type": "string"} for k in ("kind", "slug", "version")}}}}}}}}),
    },
    "/api/v1/search": {
        "get": _op("lexical search over slug, name and description", _json("results", "Search"), 400, params=[
            _param("q", "query", "query text", required=True),
            _param("kind", "query", "skill|role|agent|memory|integration|all"),
            _param("limit", "query", "1..100 (default 20)", schema="integer")]),
    },
    "/api/v1/downloads": {
        "post": _op("count a download (never fails a client)", _json("ok"), 400,
                    body=_json_body({"kind": "string", "slug": "string", "version": "string"}, ["kind", "slug"])),
    },
    "/api/v1/whoami": {"get": _op("the token's user", _json("user", "User"), 401, 403, auth=True)},
    "/api/v1/stars/toggle": {
        "post": _op("star or unstar a package", _json("star state"), 400, 401, 404, auth=True,
                    body=_json_body({"kind": "string", "slug": "string"}, ["kind", "slug"])),
    },
    "/api/v1/admin/set-role": {
        "post": _op("set a user's role (admin)", _json("user role"), 400, 401, 403, 404, auth=True,
                    body=_json_body({"handle": "string", "role": "string"}, ["handle", "role"])),
    },
    "/api/v1/admin/ban-user": {
        "post": _op("ban or unban a user (admin)", _json("ban state"), 400, 401, 403, 404, auth=True,
                    body=_json_body({"handle": "string", "blocked": "boolean", "reason": "string"}, ["handle"])),
    },
    "/api/v1/keys": {
        "post": _op("register an Ed25519 publisher key (base64 raw bytes)", _json("the key"), 400, 401, 409,
                    auth=True, status="201", body=_json_body({"publicKey": "string"}, ["publicKey"])),
    },
    "/api/v1/keys/revoke": {
        "post": _op("revoke one of your keys", _json("the key"), 400, 401, 404, auth=True,
                    body=_json_body({"keyId": "string"}, ["keyId"])),
    },
    "/api/v1/users/{handle}/keys": {"get": _op("a user's publisher keys, revoked ones included", _json("keys"), 404,
                                               params=[_param("handle", "path", "user handle")])},
    "/api/v1/log/head": {"get": _op("the transparency log's signed tree head", _json("tree head"))},
    "/api/v1/log/entries": {"get": _op("log entries [start, end), at most 1000", _json("entries"), 400, params=[
        _param("start", "query", "first index", schema="integer"), _param("end", "query", "end index", schema="integer")])},
    "/api/v1/log/proof/inclusion": {"get": _op("RFC 6962 inclusion proof", _json("proof"), 400, params=[
        _param("index", "query", "leaf index", required=True, schema="integer"),
        _param("size", "query", "tree size (default: current)", schema="integer")])},
    "/api/v1/log/proofs": {"post": _op("entries and inclusion proofs of several indexes at one size", _json("proofs"),
                                       400, body=_json_body({"size": "integer", "indexes": "array"}, ["indexes"]))},
    "/api/v1/log/proof/consistency": {"get": _op("RFC 6962 consistency proof", _json("proof"), 400, params=[
        _param("first", "query", "older tree size", required=True, schema="integer"),
        _param("second", "query", "newer tree size (default: current)", schema="integer")])},
}


def _page(summary: str, *params: dict[str, Any], json: str | None = None) -> dict[str, Any]:
    """A web page: HTML for `Accept: text/html`; other clients get the JSON API's answer or a 406."""
    other = f"without Accept: text/html, the same JSON as {json}" if json else "406 without Accept: text/html"
    return {"get": {"summary": f"{summary} (web page; {other})", "parameters": list(params), "responses": {
        "200": {"description": "the page", "content": {"text/html": {}}},
        "404": {"description": "no such package or user", "content": {"text/html": {}}},
        "406": _json("not a browser, and the page has no JSON form", "Error")}}}


_PATHS.update({
    "/": _page("home: search box, counts per kind, recently updated and most downloaded packages"),
    "/search": _page("search results, paginated", _param("q", "query", "query text (empty lists everything)"),
                     _param("kind", "query", "skill|role|agent|memory|integration"),
                     _param("page", "query", "1-based page number", schema="integer"), json="/api/v1/search"),
    "/{kinds}/{slug}": _page("package page: body, install commands, versions, dependencies, used by, files",
                             _KINDS, _SLUG, _param("version", "query", "exact version"),
                             json="/api/v1/{kinds}/{slug}"),
    "/users/{name}": _page("what a user published", _param("name", "path", "user handle")),
    "/static/{name}": {"get": {"summary": "the pages' stylesheet and script", "parameters": [
        _param("name", "path", "style.css or copy.js")], "responses": {
        "200": {"description": "file", "content": {"text/css": {}, "text/javascript": {}}},
        "404": {"description": "no such file"}}}},
})

_OBJ = {"type": "object"}
_SCHEMAS: dict[str, Any] = {
    "Object": _OBJ,
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    "List": {"type": "object", "properties": {"items": {"type": "array", "items": _OBJ}, "count": {"type": "integer"}}},
    "Detail": {"type": "object", "properties": {k: _OBJ for k in (
        "slug", "displayName", "summary", "owner", "stats", "dependencies", "latestVersion", "createdAt", "updatedAt")}},
    "Published": {"type": "object", "properties": {"version": {"type": "string"}, "versionId": {"type": "string"}},
                  "description": "plus <kind>Id (skillId, roleId, ...)"},
    "Resolution": {"type": "object", "properties": {"dependencies": {"type": "array", "items": {
        "type": "object", "properties": {"kind": {"type": "string"}, "slug": {"type": "string"},
                                          "version": {"type": "string"}}}}}},
    "Versions": {"type": "object", "properties": {
        "kind": {"type": "string"}, "slug": {"type": "string"},
        "versions": {"type": "array", "items": {"type": "object", "properties": {
            "version": {"type": "string"}, "dependencies": _OBJ, "defaultAgent": {"type": ["string", "null"]},
            "tools": _OBJ, "sha256": {"type": "string"}, "size": {"type": "integer"},
            "files": {"type": "array", "items": {"type": "object", "properties": {
                "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
                "executable": {"type": "boolean"}}}},
            "yanked": {"type": "boolean"}, "createdAt": {"type": "integer"},
            "logIndex": {"type": ["integer", "null"]}, "provenance": {"type": ["object", "null"]},
            "log": {"type": "string", "description": "a mirror's upstream whose log holds logIndex"}}}}}},
    "Closure": {"type": "object", "properties": {
        "packages": {"type": "array", "items": {"type": "object", "properties": {
            "etag": {"type": "string"}, "versions": {"$ref": "#/components/schemas/Versions"}}}},
        "unchanged": {"type": "array", "items": {"type": "string"}, "description": "kind:slug ids held unchanged"},
        "missing": {"type": "array", "items": {"type": "string"}, "description": "kind:slug ids not published"},
        "complete": {"type": "boolean"}, "limit": {"type": "integer"}}},
    "Search": {"type": "object", "properties": {"results": {"type": "array", "items": _OBJ},
                                                "count": {"type": "integer"}}},
    "User": {"type": "object", "properties": {k: {"type": "string"} for k in ("handle", "displayName", "email", "role")}},
}


def openapi_document(version: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "StrawPot registry (StrawHub API v1 + extensions)", "version": version,
                 "description": "See docs/registry-api.md. Errors are {\"error\": message}; times are ms since the epoch."},
        "paths": _PATHS,
        "components": {"schemas": _SCHEMAS,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                                      "description": "sh_ + 40 hex"}}},
    }
