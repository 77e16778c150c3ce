"""JSON shapes of the v1 API and the extensions, built from storage records."""

from __future__ import annotations

from typing import Any

from registry_server.storage.base import PackageRecord, User, VersionRecord


def owner_json(user: User) -> dict[str, Any]:
    return {"handle": user.handle, "displayName": user.display_name}


def stats_json(pkg: PackageRecord) -> dict[str, int]:
    return {"downloads": pkg.downloads, "stars": pkg.stars, "versions": pkg.version_count}


def list_item(pkg: PackageRecord, latest: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": pkg.kind.value,
        "slug": pkg.slug,
        "displayName": pkg.display_name,
        "summary": pkg.summary,
        "stats": stats_json(pkg),
        "tags": list(pkg.tags),
        "createdAt": pkg.created_at,
        "updatedAt": pkg.updated_at,
    }
    if latest is not None:
        item["latestVersion"] = latest
    return item


def version_v1(rec: VersionRecord) -> dict[str, Any]:
    """A version as the v1 detail's `latestVersion` (plus sha256/executable, which old clients ignore)."""
    return {
        "version": rec.version,
        "changelog": rec.changelog,
        "dependencies": rec.dependencies,
        "files": [f.to_json() for f in rec.files],
        "createdAt": rec.created_at,
        "yanked": rec.yanked,
    }


def detail_json(pkg: PackageRecord, chosen: VersionRecord | None) -> dict[str, Any]:
    return {
        "kind": pkg.kind.value,
        "slug": pkg.slug,
        "displayName": pkg.display_name,
        "summary": pkg.summary,
        "owner": owner_json(pkg.owner),
        "stats": stats_json(pkg),
        "tags": list(pkg.tags),
        "dependencies": chosen.dependencies if chosen else {},
        "latestVersion": version_v1(chosen) if chosen else None,
        "createdAt": pkg.created_at,
        "updatedAt": pkg.updated_at,
    }


def version_ext(rec: VersionRecord) -> dict[str, Any]:
    """One entry of `GET /{kinds}/{slug}/versions` (docs/registry-api.md)."""
    entry = {
        "version": rec.version,
        "dependencies": rec.dependencies,
        "defaultAgent": rec.default_agent,
        "tools": rec.tools,
        "sha256": rec.archive_sha256,
        "size": rec.archive_size,
        "files": [f.to_json() for f in rec.files],
        "yanked": rec.yanked,
        "createdAt": rec.created_at,
        "logIndex": rec.log_index,
        "provenance": None if rec.statement is None else {
            "statement": rec.statement, "signature": rec.signature, "keyId": rec.key_id,
        },
    }
    return entry if rec.log is None else {**entry, "log": rec.log}


def user_json(user: User) -> dict[str, Any]:
    return {"handle": user.handle, "displayName": user.display_name, "email": user.email, "role": user.role}
