"""The Storage implementations directly: the same rules for memory and SQLite, and SQLite's on-disk shape."""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

import pytest

from registry_server.auth import hash_token
from registry_server.ratelimit import RateLimit
from registry_server.search import score
from registry_server.storage import SQLiteStorage
from registry_server.storage.base import (
    FileEntry,
    NewVersion,
    NotOwner,
    PackageDeleted,
    Storage,
    VersionConflict,
    VersionRecord,
)
from strawpot.model.kinds import Kind
from tests._cli import strawpot_here


def new(slug: str, version: str, kind: Kind = Kind.SKILL) -> NewVersion:
    record = VersionRecord(version, "", {"skills": []}, (FileEntry("SKILL.md", 1, "0" * 64),), "1" * 64, 10, 0)
    return NewVersion(kind, slug, slug.title(), f"About {slug}", ("tag",), record)


def test_publish_rules_hold_inside_the_storage(storage: Storage) -> None:
    alice, bob = storage.ensure_user("alice"), storage.ensure_user("bob")
    first = storage.publish(new("pkg", "1.0.0"), alice)
    assert first.package_id and first.version_id
    with pytest.raises(VersionConflict, match="already exists"):
        storage.publish(new("pkg", "1.0.0"), alice)
    with pytest.raises(VersionConflict, match="greater than the latest"):
        storage.publish(new("pkg", "0.9.0"), alice)
    with pytest.raises(NotOwner):
        storage.publish(new("pkg", "2.0.0"), bob)
    storage.publish(new("pkg", "1.0.0", Kind.ROLE), bob)  # kinds are separate namespaces
    assert [r.version for r in storage.versions(Kind.SKILL, "pkg") or []] == ["1.0.0"]
    pkg = storage.get_package(Kind.SKILL, "pkg")
    assert pkg is not None and pkg.owner.handle == "alice" and pkg.version_count == 1 and pkg.tags == ("tag",)


def test_deletes_are_final_inside_the_storage(storage: Storage) -> None:
    alice, bob = storage.ensure_user("alice"), storage.ensure_user("bob")
    storage.publish(new("gone", "1.0.0"), alice)
    storage.publish(new("gone", "1.1.0"), alice)
    assert storage.delete_package(Kind.SKILL, "gone")
    for user, version in ((alice, "2.0.0"), (alice, "1.0.0"), (bob, "3.0.0")):
        with pytest.raises(PackageDeleted, match="skill 'gone' was deleted from this registry and deletes are final"):
            storage.publish(new("gone", version), user)
    assert storage.versions(Kind.SKILL, "gone") is None and storage.get_package(Kind.SKILL, "gone") is None
    storage.publish(new("gone", "1.0.0", Kind.ROLE), bob)  # another kind is another name
    if isinstance(storage, SQLiteStorage):  # and it holds after a restart
        again = SQLiteStorage(storage.data_dir)
        with pytest.raises(PackageDeleted):
            again.publish(new("gone", "9.0.0"), alice)
        again.close()


def test_racing_publishes_in_threads_store_one_version(storage: Storage) -> None:
    owner = storage.ensure_user("alice")
    storage.publish(new("pkg", "1.0.0"), owner)
    barrier, outcomes = threading.Barrier(12), []

    def race() -> None:
        barrier.wait()
        try:
            storage.publish(new("pkg", "1.1.0"), owner)
            outcomes.append("ok")
        except VersionConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=race) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 11 + ["ok"]
    assert [r.version for r in storage.versions(Kind.SKILL, "pkg") or []] == ["1.0.0", "1.1.0"]


def test_listing_stars_downloads_yank_delete(storage: Storage) -> None:
    alice, bob = storage.ensure_user("alice"), storage.ensure_user("bob")
    storage.publish(new("a", "1.0.0"), alice)
    storage.publish(new("b", "1.0.0"), alice)
    assert storage.add_download(Kind.SKILL, "a") and not storage.add_download(Kind.SKILL, "zzz")
    storage.add_downloads({(Kind.SKILL, "a"): 2, (Kind.SKILL, "zzz"): 5})
    assert [(p.slug, p.downloads) for p in storage.list_packages(Kind.SKILL, "downloads", 10)] == [("a", 3), ("b", 0)]
    assert storage.toggle_star(bob, Kind.SKILL, "b") == (True, 1)
    assert [p.slug for p in storage.list_packages(Kind.SKILL, "downloads", 10)] == ["a", "b"]
    assert [p.slug for p in storage.list_packages(Kind.SKILL, "stars", 10)] == ["b", "a"]
    assert [p.slug for p in storage.list_packages(None, "updated", 1)] == ["b"]
    assert storage.set_yanked(Kind.SKILL, "a", "1.0.0", True)
    assert not storage.set_yanked(Kind.SKILL, "a", "9.0.0", True)
    assert (storage.versions(Kind.SKILL, "a") or [])[0].yanked
    assert storage.delete_package(Kind.SKILL, "a") and not storage.delete_package(Kind.SKILL, "a")
    assert storage.get_package(Kind.SKILL, "a") is None and storage.versions(Kind.SKILL, "a") is None
    assert [p.slug for p in storage.list_packages(Kind.SKILL, "updated", 10)] == ["b"]


def test_users_tokens_roles_bans(storage: Storage) -> None:
    user = storage.ensure_user("carol")
    storage.add_token(user.id, hash_token("sh_" + "a" * 40))
    assert storage.user_by_token(hash_token("sh_" + "a" * 40)) == user
    assert storage.user_by_token(hash_token("sh_" + "b" * 40)) is None
    assert storage.set_role("carol", "moderator").role == "moderator"  # type: ignore[union-attr]
    assert storage.set_banned("carol", True, "spam").banned  # type: ignore[union-attr]
    assert storage.ensure_user("carol", role="admin").role == "admin"
    assert storage.set_role("nobody", "user") is None


def test_blobs_are_content_addressed(storage: Storage) -> None:
    digest = storage.put_blob(b"hello")
    assert digest == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert storage.put_blob(b"hello") == digest and storage.get_blob(digest) == b"hello"
    assert storage.get_blob("f" * 64) is None


def test_sqlite_uses_wal_and_survives_reopening(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "fresh" / "data")
    store.publish(new("pkg", "1.0.0"), store.ensure_user("alice"))
    store.close()
    with sqlite3.connect(tmp_path / "fresh" / "data" / "registry.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    again = SQLiteStorage(tmp_path / "fresh" / "data")
    assert [r.version for r in again.versions(Kind.SKILL, "pkg") or []] == ["1.0.0"]
    again.close()


def test_token_create_command_prints_once_and_stores_only_the_hash(tmp_path: Path) -> None:
    cmd = ("registry", "token", "create", "--data", str(tmp_path / "d"))
    done = strawpot_here(*cmd, "--user", "dana", "--admin", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert re.fullmatch(r"sh_[0-9a-f]{40}", token)
    raw = b"".join(p.read_bytes() for p in (tmp_path / "d").glob("registry.sqlite3*"))
    assert token.encode() not in raw and hash_token(token).encode() in raw
    store = SQLiteStorage(tmp_path / "d")
    user = store.user_by_token(hash_token(token))
    assert user is not None and user.handle == "dana" and user.is_admin
    store.close()
    bad = strawpot_here(*cmd, "--user", "Not A Handle", cwd=tmp_path)
    assert bad.returncode == 2 and "handle" in bad.stderr


def test_token_bucket_arithmetic() -> None:
    limiter = RateLimit(app=None, rate=2, burst=3)
    assert [limiter.take("a", now=0.0) for _ in range(3)] == [0, 0, 0]
    assert limiter.take("a", now=0.0) == pytest.approx(0.5)
    assert limiter.take("b", now=0.0) == 0  # per address
    assert limiter.take("a", now=0.5) == 0  # refilled one token


@pytest.mark.parametrize(
    ("slug", "name", "description", "expected"),
    [("review", "", "", "exact"), ("review-kit", "", "", "prefix"), ("code-review", "", "", "substring"),
     ("other", "Review helper", "", "name"), ("other", "", "does review", "description"), ("other", "", "", "none")],
)
def test_search_score_tiers(slug: str, name: str, description: str, expected: str) -> None:
    tiers = ["none", "description", "name", "substring", "prefix", "exact"]
    got = score("review", slug, name, description)
    ranks = {t: score("review", *args) for t, args in {
        "exact": ("review", "", ""), "prefix": ("review-kit", "", ""), "substring": ("code-review", "", ""),
        "name": ("other", "Review helper", ""), "description": ("other", "", "does review"), "none": ("other", "", "")}.items()}
    assert [ranks[t] for t in tiers] == sorted(ranks.values())
    assert got == ranks[expected] and 0 <= got <= 1


def test_gc_keeps_what_live_versions_name_and_removes_the_rest(storage: Storage) -> None:
    import dataclasses
    import time

    from registry_server.gc import collect

    alice = storage.ensure_user("alice")
    shared, kept_only, dropped_only, orphan = (storage.put_blob(d) for d in (b"shared", b"kept", b"dropped", b"orphan"))

    def version(slug: str, *blobs: str) -> NewVersion:
        files = tuple(FileEntry(f"f{i}.md", 1, sha) for i, sha in enumerate(blobs[1:]))
        return dataclasses.replace(new(slug, "1.0.0"), record=VersionRecord("1.0.0", "", {}, files, blobs[0], 1, 0))

    storage.publish(version("kept", kept_only, shared), alice)
    storage.publish(version("dropped", dropped_only, shared), alice)
    assert storage.delete_package(Kind.SKILL, "dropped")
    assert storage.live_blobs() == {kept_only, shared}
    everything = {sha for sha, _ in storage.list_blobs()}
    assert collect(storage, grace=3600).removed == []  # all of them are young
    assert sorted(collect(storage, grace=0, dry_run=True, now=time.time() + 1).removed) == sorted([dropped_only, orphan])
    assert {sha for sha, _ in storage.list_blobs()} == everything
    report = collect(storage, grace=0, now=time.time() + 1)
    assert sorted(report.removed) == sorted([dropped_only, orphan]) and report.kept == 2
    assert {sha for sha, _ in storage.list_blobs()} == {kept_only, shared}
    assert storage.get_blob(shared) == b"shared" and storage.get_blob(orphan) is None


@pytest.mark.parametrize("backend", ["sqlite", "postgres+s3"])
def test_a_crash_before_the_commit_leaves_only_unreferenced_blobs(
        backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Blobs first, then the row: a publish that dies in between is invisible, and gc takes its blobs."""
    import time

    from registry_server.gc import collect
    from registry_server.storage.backends import StorageSpec, open_storage

    spec = StorageSpec(tmp_path) if backend == "sqlite" else request.getfixturevalue("pg_s3").spec(tmp_path)
    storage = open_storage(spec)

    def crash() -> None:
        raise KeyboardInterrupt

    storage._before_commit = crash  # type: ignore[method-assign]
    alice = storage.ensure_user("alice")
    blob = storage.put_blob(b"file of a publish that dies")
    record = VersionRecord("1.0.0", "", {}, (FileEntry("SKILL.md", 1, blob),), blob, 1, 0)
    with pytest.raises(KeyboardInterrupt):
        storage.publish(NewVersion(Kind.SKILL, "dies", "Dies", "", (), record), alice)
    assert storage.versions(Kind.SKILL, "dies") is None and storage.get_package(Kind.SKILL, "dies") is None
    assert storage.change_seq() == 0
    assert collect(storage, grace=0, now=time.time() + 1).removed == [blob]
    storage.close()
