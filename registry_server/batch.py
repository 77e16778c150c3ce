"""`POST /batch`: several packages, each the multipart contract of `POST /{kinds}` under an `<n>.` prefix,
checked like single publishes (a dependency may be another member of the batch) and stored in one transaction."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from registry_server.auth import bearer_user
from registry_server.errors import ApiError
from registry_server.limits import MAX_UPLOAD
from registry_server.multipart import Upload
from registry_server.publish import prepare, publish_errors, received
from registry_server.state import registry
from registry_server.storage.base import (
    NewVersion,
    Storage,
    User,
    VersionRecord,
)
from strawpot.model.kinds import Kind
from strawpot.model.package import MAX_FILES
from strawpot.model.plural import count

if TYPE_CHECKING:
    from registry_server.storage.base import KeyRecord, PackageRecord

MAX_BATCH = 50
"""The most packages one batch publishes."""
MAX_BATCH_BYTES = MAX_UPLOAD
"""The most bytes one batch body carries (the limit of one single publish: members share it)."""
_MAX_PARTS = MAX_BATCH * 10 + 4 * MAX_FILES  # every member's fields, and files up to what the bytes allow
# A member's number: ASCII digits without a leading zero (`str.isdigit` also takes "¹" and "٣", which `int` refuses
# or reads as another number).
_INDEX = re.compile(r"0|[1-9][0-9]{0,5}")


async def batch(request: Request) -> JSONResponse:
    reg = registry(request)
    user = await run_in_threadpool(bearer_user, reg.storage, request.headers.get("authorization"))
    news = await received(request, user,
                          lambda upload: prepare_batch(reg.storage, user, upload, allow_ranges=reg.allow_ranges,
                                                                 require_signatures=reg.require_signatures),
                          max_total=MAX_BATCH_BYTES, max_parts=_MAX_PARTS, batch=True)
    try:
        with publish_errors():
            done = await run_in_threadpool(reg.storage.publish_batch, news, user)
    finally:
        for new in news:
            reg.changed(new.kind, new.slug)
    published = [
        {"kind": n.kind.value, "slug": n.slug, "version": n.record.version,
         "packageId": str(p.package_id), "versionId": str(p.version_id)}
        for n, p in zip(news, done, strict=True)
    ]
    return JSONResponse({"published": published}, status_code=201)


def _index(prefix: str) -> int | None:
    """The member number a field's `<n>.` prefix names, or None when it is not one."""
    return int(prefix) if _INDEX.fullmatch(prefix) else None


def split(upload: Upload) -> list[tuple[Kind, Upload]]:
    """The members of a batch body, in index order: `<n>.kind` and `<n>.<field>` fields, `<n>.files` parts."""
    members: dict[int, Upload] = {}
    issues = list(upload.issues)
    for name, value in upload.fields.items():
        prefix, dot, key = name.partition(".")
        if not (dot and key and (index := _index(prefix)) is not None):
            issues.append(f"form field {name!r}: a batch names every field `<n>.<field>` (`0.slug`, `1.version`)")
            continue
        members.setdefault(index, Upload()).fields[key] = value
    for part in upload.files:
        if (index := _index(part.form_name.partition(".")[0])) is not None:
            members.setdefault(index, Upload()).files.append(part)
    if not members and not issues:
        issues.append("the batch holds no package (send `0.kind`, `0.slug`, `0.version` and `0.files` parts)")
    if len(members) > MAX_BATCH:
        raise ApiError(413, f"a batch publishes at most {MAX_BATCH} packages; this one has {len(members)}")
    if members and sorted(members) != list(range(len(members))):
        issues.append(f"batch members must be numbered 0 to {len(members) - 1} without gaps")
    found: list[tuple[Kind, Upload]] = []
    for number in sorted(members):
        member = members[number]
        raw = member.fields.pop("kind", "").strip()
        try:
            found.append((Kind.parse(raw), member))
        except ValueError:
            issues.append(f"{number}.kind: {raw!r} is not one of " + ", ".join(k.value for k in Kind))
    if issues:
        raise ApiError(400, f"batch refused, {count(len(issues), 'problem')}: " + "; ".join(issues), {}, issues=issues)
    return found


class _WithPending:
    """The storage as one member's checks see it: the other members' versions already listed, unstored."""

    def __init__(self, storage: Storage, pending: dict[tuple[Kind, str], str]) -> None:
        self._storage = storage
        self._pending = pending

    def get_package(self, kind: Kind, slug: str) -> PackageRecord | None:
        return self._storage.get_package(kind, slug)

    def versions(self, kind: Kind, slug: str) -> list[VersionRecord] | None:
        stored = self._storage.versions(kind, slug)
        version = self._pending.get((kind, slug))
        if version is None:
            return stored
        return [*(stored or []), VersionRecord(version, "", {}, (), "", 0, 0)]

    def put_blob(self, data: bytes) -> str:
        return self._storage.put_blob(data)

    def key(self, key_id: str) -> KeyRecord | None:
        return self._storage.key(key_id)


def prepare_batch(storage: Storage, user: User, upload: Upload, *,
                  allow_ranges: bool = False, require_signatures: bool = False) -> Sequence[NewVersion]:
    """Check every member as a single publish is checked (every problem of every member in one 400), then
    store their blobs; nothing is visible until `Storage.publish_batch` commits them together."""
    members = split(upload)
    named = [(kind, m.fields.get("slug", "").strip(), m.fields.get("version", "").strip()) for kind, m in members]
    issues: list[str] = []
    seen: set[tuple[Kind, str]] = set()
    for kind, slug, _ in named:
        if (kind, slug) in seen:
            issues.append(f"{kind.value} {slug!r} appears twice in the batch")
        seen.add((kind, slug))
    news: list[NewVersion] = []
    for (kind, member), (_, slug, _) in zip(members, named, strict=True):
        others = {(k, s): v for k, s, v in named if (k, s) != (kind, slug) and s and v}
        try:
            news.append(prepare(cast(Storage, _WithPending(storage, others)), kind, user, member,
                                allow_ranges=allow_ranges, require_signatures=require_signatures))
        except ApiError as exc:
            if exc.status != 400:
                raise
            problems = exc.extra.get("issues") or [exc.message]
            issues += [f"{kind.value} {slug or '?'}: {p}" for p in problems]
    if issues:
        raise ApiError(400, f"batch refused, {count(len(issues), 'problem')}: " + "; ".join(issues), {}, issues=issues)
    return news
