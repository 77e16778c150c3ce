"""Read endpoints: list, detail, file, search, downloads (v1) and versions, archive (extensions)."""

from __future__ import annotations

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse

from registry_server.cache import PackageVersions
from registry_server.errors import ApiError
from registry_server.render import detail_json, list_item
from registry_server.requests import etag_matches, int_param, json_body
from registry_server.search import rank
from registry_server.state import Registry, body_kind, path_kind, registry
from registry_server.storage.base import PackageRecord, VersionRecord
from strawpot.model.kinds import Kind
from strawpot.model.package import slug_error

_SORTS = ("updated", "downloads", "stars")
MAX_QUERY = 256  # characters of a search; ranking costs grow with the query's length
_IMMUTABLE = "public, max-age=31536000, immutable"


async def package_versions(reg: Registry, kind: Kind, slug: str) -> PackageVersions:
    """The cached version list of a package (loaded in a worker thread on a miss), or a 404."""
    entry = reg.versions.peek(kind, slug) or await run_in_threadpool(reg.versions.load, kind, slug)
    if entry is None:
        raise ApiError(404, f"{kind.value} {slug!r} not found")
    return entry


def pick_version(entry: PackageVersions, kind: Kind, slug: str, version: str | None) -> VersionRecord:
    """An exact version (yanked ones included) or the latest; a 404 when there is none."""
    if version:
        record = entry.by_version.get(version.strip().removeprefix("v"))
        if record is None:
            raise ApiError(404, f"version {version} of {kind.value} {slug!r} not found")
        return record
    if entry.latest is None:
        raise ApiError(404, f"{kind.value} {slug!r} has no installable version (all are yanked)")
    return entry.latest


class CountedReads:
    """The package reads that show download counts, run after the pending counts are written."""

    def __init__(self, reg: Registry) -> None:
        self.reg = reg

    def list_packages(self, kind: Kind | None, sort: str, limit: int) -> list[PackageRecord]:
        self.reg.downloads.flush()
        return self.reg.storage.list_packages(kind, sort, limit)

    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        self.reg.downloads.flush()
        return self.reg.storage.get_package(kind, slug)


async def list_packages(request: Request) -> JSONResponse:
    kind = path_kind(request)
    limit = int_param(request, "limit", 50, 1, 200)
    sort = request.query_params.get("sort") or "updated"
    if sort not in _SORTS:
        raise ApiError(400, f"sort must be one of {', '.join(_SORTS)}, got {sort!r}")
    records = await run_in_threadpool(CountedReads(registry(request)).list_packages, kind, sort, limit)
    return JSONResponse({"items": [list_item(r) for r in records], "count": len(records)})


async def detail(request: Request) -> JSONResponse:
    kind, slug = path_kind(request), request.path_params["slug"]
    reg = registry(request)
    entry = await package_versions(reg, kind, slug)
    pkg = await run_in_threadpool(CountedReads(reg).get_package, kind, slug)
    if pkg is None:
        raise ApiError(404, f"{kind.value} {slug!r} not found")
    version = request.query_params.get("version")
    record = pick_version(entry, kind, slug, version) if version else entry.latest
    return JSONResponse(detail_json(pkg, record))


async def file(request: Request) -> Response:
    kind, slug = path_kind(request), request.path_params["slug"]
    reg = registry(request)
    path = request.query_params.get("path") or kind.main_file
    version = request.query_params.get("version")
    record = pick_version(await package_versions(reg, kind, slug), kind, slug, version)
    entry = next((f for f in record.files if f.path == path), None)
    if entry is None:
        raise ApiError(404, f"{kind.value} {slug!r} {record.version} has no file {path!r}")
    headers = {"ETag": f'"{entry.sha256}"', "Cache-Control": _IMMUTABLE if version else "no-cache"}
    if etag_matches(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    if entry.size > reg.blobs.max_item:  # streamed, never whole in memory
        return await streamed_blob(reg, entry.sha256, "application/octet-stream", headers, f"the stored bytes of {path!r}")
    data = reg.blobs.peek(entry.sha256) or await run_in_threadpool(reg.blobs.load, entry.sha256)
    if data is None:
        raise ApiError(500, f"the stored bytes of {path!r} are missing")
    return Response(data, media_type=reg.blobs.content_type(entry.sha256, data), headers=headers)


async def streamed_blob(reg: Registry, sha256: str, media_type: str, headers: dict[str, str], what: str) -> Response:
    """A large blob sent as it is read: a local file as it is, a remote one a chunk at a time off the event loop."""
    if (path := reg.storage.blob_path(sha256)) is not None:
        return FileResponse(path, media_type=media_type, headers=headers)
    chunks = await run_in_threadpool(reg.storage.open_blob, sha256)
    if chunks is None:
        raise ApiError(500, f"{what} is missing")
    return StreamingResponse(iterate_in_threadpool(chunks), media_type=media_type, headers=headers)


async def versions(request: Request) -> Response:
    kind, slug = path_kind(request), request.path_params["slug"]
    entry = await package_versions(registry(request), kind, slug)
    headers = {"ETag": entry.etag, "Cache-Control": "no-cache"}
    if etag_matches(request, entry.etag):
        return Response(status_code=304, headers=headers)
    return Response(entry.body, media_type="application/json", headers=headers)


async def archive(request: Request) -> Response:
    """The version's archive; a full answer (200) counts one download of the package."""
    kind, slug = path_kind(request), request.path_params["slug"]
    reg = registry(request)
    record = pick_version(await package_versions(reg, kind, slug), kind, slug, request.path_params["version"])
    headers = {"ETag": f'"{record.archive_sha256}"', "Cache-Control": _IMMUTABLE}
    if etag_matches(request, headers["ETag"]):
        return Response(status_code=304, headers=headers)
    response: Response
    if record.archive_size > reg.blobs.max_item:  # streamed, never whole in memory
        response = await streamed_blob(reg, record.archive_sha256, "application/gzip", headers, "the stored archive")
    else:
        data = reg.blobs.peek(record.archive_sha256) or await run_in_threadpool(reg.blobs.load, record.archive_sha256)
        if data is None:
            raise ApiError(500, "the stored archive is missing")
        response = Response(data, media_type="application/gzip", headers=headers)
    reg.downloads.add(kind, slug)
    return response


async def search(request: Request) -> JSONResponse:
    query = (request.query_params.get("q") or "").strip()
    if not query:
        raise ApiError(400, "query parameter 'q' is required")
    if len(query) > MAX_QUERY:
        raise ApiError(400, f"query parameter 'q' has {len(query)} characters; the limit is {MAX_QUERY}")
    raw_kind = request.query_params.get("kind") or "all"
    kind = None if raw_kind == "all" else body_kind(raw_kind)
    limit = int_param(request, "limit", 20, 1, 100)
    records = await run_in_threadpool(CountedReads(registry(request)).list_packages, kind, "updated", 100_000)
    hits = rank(query, records)
    results = [
        {"kind": r.kind.value, "slug": r.slug, "displayName": r.display_name, "summary": r.summary, "score": s}
        for s, r in hits[:limit]
    ]
    return JSONResponse({"results": results, "count": len(results)})


async def downloads(request: Request) -> JSONResponse:
    """v1 download counting (what strawhub sends); the count is written in the next batch."""
    body = await json_body(request)
    kind = body_kind(body.get("kind"))
    slug = body.get("slug")
    reg = registry(request)
    counted = False
    if isinstance(slug, str) and slug_error(slug) is None:
        entry = reg.versions.peek(kind, slug) or await run_in_threadpool(reg.versions.load, kind, slug)
        if entry is not None:
            reg.downloads.add(kind, slug)
            counted = True
    return JSONResponse({"ok": True, "counted": counted})
