"""`POST /{kinds}`: read the multipart upload as it streams, validate everything at once, store
blobs, then insert the version in one transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.auth import bearer_user
from registry_server.errors import ApiError
from registry_server.limits import MAX_UPLOAD
from registry_server.mirror.storage import MirrorStorage
from registry_server.multipart import Upload, read_upload
from registry_server.requests import parse_json
from registry_server.slots import SMALL_UPLOAD
from registry_server.state import path_kind, registry
from registry_server.storage.base import (
    FileEntry,
    NewVersion,
    NotOwner,
    PackageDeleted,
    Storage,
    User,
    VersionConflict,
    VersionRecord,
    check_publishable,
)
from strawpot.model import plural
from strawpot.model.dependencies import (
    GROUPS,
    Edge,
    read_edges,
    v1_groups,
    wire_groups,
)
from strawpot.model.kinds import Kind
from strawpot.model.package import Package, PackageInvalid, parse_package, slug_error
from strawpot.model.storable import text_problem

# Part types a client could use to smuggle in a link instead of a regular file.
_LINK_TYPES = frozenset({"inode/symlink", "application/x-symlink", "text/x-symlink", "application/x-link"})
_MAX_TAGS = 20
T = TypeVar("T")


async def publish(request: Request) -> JSONResponse:
    kind = path_kind(request)
    reg = registry(request)
    user = await run_in_threadpool(bearer_user, reg.storage, request.headers.get("authorization"))
    new = await received(request, user, lambda upload: prepare(reg.storage, kind, user, upload,
                                                                allow_ranges=reg.allow_ranges,
                                                                require_signatures=reg.require_signatures), max_total=MAX_UPLOAD)
    try:
        with publish_errors():
            done = await run_in_threadpool(reg.storage.publish, new, user)
    finally:
        reg.changed(kind, new.slug)
    return JSONResponse(
        {f"{kind.value}Id": str(done.package_id), "versionId": str(done.version_id), "version": new.record.version},
        status_code=201,
    )


async def received(request: Request, user: User, prepare_upload: Callable[[Upload], T], *, max_total: int,
                   **read_options: Any) -> T:
    """Read the multipart body under the user's upload budget and prepare it (in a thread); the upload itself is
    dropped before the caller stores anything. Shared by `POST /{kinds}` and `POST /batch`."""
    # The declared size was checked before this handler ran (registry_server.limits); the stream is cut there too.
    length = request.headers.get("content-length", "")
    declared = int(length) if length.isdigit() else None
    async with registry(request).upload_slots().upload(user.id, declared) as slot:  # a bounded memory budget
        upload = await read_upload(request.headers.get("content-type", ""), request.stream(), max_total=max_total,
                                   on_large=(SMALL_UPLOAD, slot.grow), **read_options)
        return await run_in_threadpool(prepare_upload, upload)


@contextmanager
def publish_errors() -> Iterator[None]:
    """Storage's refusals of a publish as API answers: not the owner 403, a taken version or deleted package 409."""
    try:
        yield
    except NotOwner as exc:
        raise ApiError(403, str(exc)) from None
    except (VersionConflict, PackageDeleted) as exc:
        raise ApiError(409, str(exc)) from None


@dataclass
class _Check:
    """Gathers every problem of one publish request before anything is stored."""

    storage: Storage
    kind: Kind
    user: User
    issues: list[str]

    def form(self, fields: dict[str, str]) -> tuple[str, str]:
        slug, version = fields.get("slug", "").strip(), fields.get("version", "").strip()
        if not slug:
            self.issues.append("slug: is required")
        elif err := slug_error(slug):
            self.issues.append(f"slug: {err}")
        if not version:
            self.issues.append("version: is required")
        else:
            from resolver import InvalidVersion, Version

            try:
                version = str(Version.parse(version))
            except InvalidVersion as exc:
                self.issues.append(f"version: {exc}")
                version = ""
        return slug, version

    def storable_fields(self, fields: dict[str, str]) -> None:
        """The form fields the database keeps (changelog, displayName, customTags...) under the one text rule."""
        for name, value in sorted(fields.items()):
            if (problem := text_problem(value)) is not None:
                self.issues.append(f"{name}: {problem}")

    def ownership_and_order(self, slug: str, version: str) -> None:
        if isinstance(self.storage, MirrorStorage) and (refusal := self.storage.shadowing(self.kind, slug)):
            raise ApiError(409, refusal)
        pkg = self.storage.get_package(self.kind, slug)
        if pkg is not None and pkg.owner.id != self.user.id:
            raise ApiError(403, f"{self.kind.value} {slug!r} belongs to {pkg.owner.handle!r}; only its owner publishes versions")
        existing = self.storage.versions(self.kind, slug) or []
        if version:
            try:
                check_publishable([r.version for r in existing], version)
            except VersionConflict as exc:
                self.issues.append(f"version: {exc}")

    def files(self, upload: Upload) -> dict[str, bytes]:
        files: dict[str, bytes] = {}
        if not upload.files:
            self.issues.append("files: no files uploaded (send one 'files' part per file)")
        for part in upload.files:
            if part.content_type.split(";")[0].strip().lower() in _LINK_TYPES or " -> " in part.name:
                self.issues.append(f"{part.name}: links are not allowed, only regular files")
            elif part.name in files:
                self.issues.append(f"{part.name}: uploaded twice")
            else:
                files[part.name] = part.data
        return files

    def declared_dependencies(self, raw: str | None) -> set[Edge] | None:
        """The `dependencies` form field (a JSON string), normalised; None when absent."""
        if raw is None or not raw.strip():
            return None
        try:
            data = parse_json(raw, "dependencies")
        except ApiError as exc:
            self.issues.append(exc.message)
            return None
        allowed = set(GROUPS.get(self.kind, {}))
        data = v1_groups(self.kind, data) if isinstance(data, list) else data
        if not isinstance(data, dict) or set(data) - allowed or not all(
            isinstance(v, list) and all(isinstance(e, str) for e in v) for v in data.values()
        ):
            shape = " or ".join(f'{{"{g}": [...]}}' for g in sorted(allowed)) or "nothing"
            self.issues.append(f"dependencies: a {self.kind.value} takes {shape}")
            return None
        found = read_edges(self.kind, data)
        self.issues.extend(f"dependencies.{bad.group}: {bad.message}" for bad in found.bad)
        return set(found.edges)

    def package(self, files: dict[str, bytes], slug: str) -> Package | None:
        try:
            return parse_package(files, kind=self.kind, expected_name=slug or None)
        except PackageInvalid as exc:
            self.issues.extend(str(issue) for issue in exc.issues)
            return None

    def published_forms(self, package: Package) -> None:
        """Every dependency entry in StrawHub's grammar (a registry started with `--allow-ranges` skips this)."""
        self.issues.extend(str(issue) for issue in package.published_form_issues())

    def dependencies_exist(self, package: Package, slug: str) -> None:
        from resolver import Version, matching

        for dep in package.dependencies:
            label = f"{dep.kind.value} {dep.name!r}"
            if dep.kind is self.kind and dep.name == slug:
                self.issues.append(f"dependencies: {label} depends on itself")
                continue
            records = self.storage.versions(dep.kind, dep.name)
            if not records:
                self.issues.append(f"dependencies: {label} does not exist in this registry")
                continue
            if not matching(dep.spec, [r.version for r in records if not r.yanked]):
                published = ", ".join(sorted((r.version for r in records if not r.yanked), key=Version.parse)) or "none"
                self.issues.append(
                    f"dependencies: no published version of {label} satisfies {dep.spec!r} (available: {published})"
                )


def v1_dependencies(package: Package) -> dict[str, list[str]]:
    """The version's dependencies as the v1 API lists them (`strawpot.model.dependencies.wire_groups`)."""
    return wire_groups(package.kind, package.declared_dependencies)


def prepare(storage: Storage, kind: Kind, user: User, upload: Upload, *, allow_ranges: bool = False,
            require_signatures: bool = False) -> NewVersion:
    """Validate an upload (every problem in one 400) and store its blobs; nothing is visible yet.

    `allow_ranges` takes dependency entries with ranges (`^1.0`, `>=1`), which StrawHub refuses;
    `require_signatures` refuses an upload without a signed statement (registry_server/signatures.py)."""
    check = _Check(storage, kind, user, list(upload.issues))
    slug, version = check.form(upload.fields)
    check.storable_fields(upload.fields)
    if slug and not slug_error(slug):
        check.ownership_and_order(slug, version)
    files = check.files(upload)
    declared = check.declared_dependencies(upload.fields.get("dependencies"))
    package = check.package(files, slug) if files else None
    if package is not None:
        if not allow_ranges:
            check.published_forms(package)
        check.dependencies_exist(package, slug)
        deps = v1_dependencies(package)
        if declared is not None and declared != set(read_edges(package.kind, deps).edges):
            check.issues.append("dependencies: the form field disagrees with the main file's metadata.strawpot.dependencies")
    if check.issues or package is None:
        count = len(check.issues)
        raise ApiError(400, f"publish refused, {plural.count(count, 'problem')}: " + "; ".join(check.issues), {}, issues=check.issues)
    return _store(storage, package, slug, version, upload.fields, user, require_signatures)


def _store(storage: Storage, package: Package, slug: str, version: str, fields: dict[str, str], user: User,
           require_signatures: bool) -> NewVersion:
    import hashlib

    from registry_server.signatures import check_signature
    from strawpot.model.archive import build_archive

    executables = set(package.bin.values()) & set(package.files)  # a wrapper the install script builds is not here
    archive = build_archive(package.files, executables)
    signed = check_signature(storage, package.kind, slug, version, user, hashlib.sha256(archive).hexdigest(), fields,
                             required=require_signatures)  # before any blob is stored
    entries = tuple(
        FileEntry(path, len(data), storage.put_blob(data), path in executables)
        for path, data in sorted(package.files.items())
    )
    record = VersionRecord(
        version=version,
        changelog=fields.get("changelog", ""),
        dependencies=v1_dependencies(package),
        files=entries,
        archive_sha256=storage.put_blob(archive),
        archive_size=len(archive),
        created_at=0,
        default_agent=package.default_agent,
        tools={
            name: {"description": tool.description, "install": tool.install} for name, tool in package.tools.items()
        },
        statement=signed.statement,
        signature=signed.signature,
        key_id=signed.key_id,
    )
    tags = tuple(t.strip() for t in fields.get("customTags", "").split(",") if t.strip())[:_MAX_TAGS]
    display = fields.get("displayName", "").strip() or package.display_name or slug
    return NewVersion(package.kind, slug, display, package.description, tags, record)
