"""The storage back-ends as an operator meets them: migrations, refusals, gc, and the faults of real servers."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from registry_server.storage import schema
from registry_server.storage.backends import StorageSpec, open_storage
from registry_server.storage.postgres import PostgresStorage
from registry_server.storage.s3 import S3Blobs
from registry_server.storage.sql import SQLStorage
from registry_server.storage.sqlite import SQLiteStorage
from tests._cli import strawpot, strawpot_here
from tests._live_registry import start_registry
from tests._services import PASSWORD, Postgres, s3_server
from tests.registry_server._helpers import main_md
from tests.registry_server.conftest import BUCKET, Backend

BROKEN = schema.Migration(2, "half of it works", (
    "CREATE TABLE half_done (id INTEGER)",
    "CREATE TABLE registry_changes (this is not SQL)",
))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`strawpot registry ARGS`: `serve` as a real process (it may listen), the rest through main() in this one."""
    if args[0] == "serve":
        return strawpot("registry", *args, cwd=Path.cwd(), timeout=120)
    return strawpot_here("registry", *args, cwd=Path.cwd())


def storage_args(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> list[str]:
    data = ["--data", str(tmp_path / "data")]
    return data if kind == "sqlite" else [*data, *request.getfixturevalue("pg_s3").args()]


def open_at(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **options: object) -> SQLStorage:
    """The storage of `storage_args`, opened with raw options (`migrate`, `migrations`)."""
    if kind == "sqlite":
        return SQLiteStorage(tmp_path / "data", **options)  # type: ignore[arg-type]
    backend: Backend = request.getfixturevalue("pg_s3")
    blobs = S3Blobs(backend.blobs, endpoint=backend.s3_endpoint)
    return PostgresStorage(backend.database, blobs, **options)  # type: ignore[arg-type]


def tables(store: SQLStorage) -> set[str]:
    with store._read() as db:
        if isinstance(store, SQLiteStorage):
            return {r[0] for r in db.all("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {r[0] for r in db.all("SELECT table_name FROM information_schema.tables"
                                     " WHERE table_schema = current_schema()")}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_serve_refuses_an_older_schema_until_migrate_upgrades_it(kind: str, tmp_path: Path,
                                                                 request: pytest.FixtureRequest) -> None:
    open_at(kind, tmp_path, request, migrate=True, migrations=schema.MIGRATIONS[:1]).close()  # what release 1 made
    args = storage_args(kind, tmp_path, request)
    refused = cli("serve", "--port", "0", *args)
    assert refused.returncode == 2, refused.stderr
    assert (f"schema version 1, older than this registry's {schema.LATEST}: run `strawpot registry migrate`"
            in refused.stderr)
    assert "Traceback" not in refused.stderr
    done = cli("migrate", *args)
    assert done.returncode == 0 and done.stdout.startswith(f"schema version {schema.LATEST}: "), done.stderr
    assert cli("migrate", *args).returncode == 0  # nothing left to do, and no harm
    store = open_at(kind, tmp_path, request)
    assert store.stored_version() == schema.LATEST and store.change_seq() == 0
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_serve_refuses_a_newer_schema(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = open_at(kind, tmp_path, request)
    with store._write() as db:
        db.run("PRAGMA user_version = 9" if kind == "sqlite" else "UPDATE schema_version SET version = 9")
    store.close()
    refused = cli("token", "create", "--user", "bob", *storage_args(kind, tmp_path, request))
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"has schema version 9, newer than this registry knows ({schema.LATEST}): upgrade strawpot" in refused.stderr


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_migration_interrupted_halfway_is_rolled_back_and_a_rerun_completes(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    open_at(kind, tmp_path, request, migrate=True, migrations=schema.MIGRATIONS[:1]).close()
    with pytest.raises((sqlite3.Error, Exception), match="syntax"):
        open_at(kind, tmp_path, request, migrate=True, migrations=(schema.MIGRATIONS[0], BROKEN))
    store = open_at(kind, tmp_path, request, migrate=True, migrations=schema.MIGRATIONS[:1])
    assert store.stored_version() == 1 and "half_done" not in tables(store)  # the half that ran was undone
    store.close()
    assert cli("migrate", *storage_args(kind, tmp_path, request)).returncode == 0
    store = open_at(kind, tmp_path, request)
    assert store.stored_version() == schema.LATEST and "half_done" not in tables(store)
    assert {"registry_changes", "advisories", "log_entries"} <= tables(store)
    store.close()


def test_a_wrong_database_password_is_one_line_naming_the_host(pg: Postgres, tmp_path: Path) -> None:
    wrong = "not-the-" + PASSWORD
    for command in (["serve", "--port", "0"], ["migrate"], ["gc"], ["token", "create", "--user", "bob"]):
        result = cli(*command, "--data", str(tmp_path), "--database", pg.url(password=wrong))
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"error: cannot connect to the PostgreSQL server at 127.0.0.1:{pg.port}/postgres")
        assert "password authentication failed" in result.stderr
        assert wrong not in result.stderr + result.stdout and "Traceback" not in result.stderr


def test_a_missing_bucket_or_a_malformed_address_is_a_usage_error(pg_s3: Backend, tmp_path: Path) -> None:
    missing = cli("serve", "--port", "0", "--data", str(tmp_path), "--blobs", "s3://no-such-bucket/x",
                  "--s3-endpoint", pg_s3.s3_endpoint)
    assert missing.returncode == 2 and "the S3 bucket 'no-such-bucket' does not exist" in missing.stderr
    for args in (["--blobs", "http://x/y"], ["--database", "mysql://u:secret@h/db"], ["--s3-endpoint", "http://x"]):
        bad = cli("serve", "--port", "0", "--data", str(tmp_path), *args)
        assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "secret" not in bad.stderr, bad.stderr


def _publish(url: str, token: str, slug: str, version: str) -> httpx.Response:
    files = [("files", ("SKILL.md", main_md(slug, version), "text/markdown"))]
    return httpx.post(f"{url}/api/v1/skills", data={"slug": slug, "version": version, "changelog": ""}, files=files,
                      headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _until(seen: list[int], status: int, start: int = 0) -> None:
    """Wait (at most 60 s) until the readers have met `status` after their first `start` answers."""
    deadline = time.monotonic() + 60
    while status not in seen[start:]:
        assert time.monotonic() < deadline, f"the readers never met a {status}: {sorted(set(seen))}"
        time.sleep(0.05)


def _until_served(http: httpx.Client, url: str) -> httpx.Response:
    """GET `url` until it is not a 503 (the pool reconnects with a back-off of its own), for at most 30 s."""
    deadline = time.monotonic() + 30
    while (answer := http.get(url)).status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def test_postgres_restarted_under_load_answers_503_then_recovers_without_a_registry_restart(
        pg: Postgres, pg_s3: Backend, tmp_path: Path) -> None:
    with start_registry(tmp_path, storage_args=pg_s3.args(), workers=2) as reg, httpx.Client(timeout=30) as http:
        assert _publish(reg.url, reg.token, "steady", "1.0.0").status_code == 201
        seen: list[int] = []
        stop = threading.Event()

        def load() -> None:  # readers that keep going through the restart
            with httpx.Client(timeout=30) as own:
                while not stop.is_set():
                    seen.append(own.get(f"{reg.url}/api/v1/skills/steady/versions").status_code)

        readers = [threading.Thread(target=load) for _ in range(4)]
        for thread in readers:
            thread.start()
        try:
            _until(seen, 200)  # the readers are being served before the database goes
            pg.stop()
            try:
                for path in ("/api/v1/skills/steady/versions", "/api/v1/skills", "/api/v1/skills/steady"):
                    down = http.get(reg.url + path)
                    assert down.status_code == 503, down.text
                    assert down.headers["retry-after"] == "2" and "storage is unavailable" in down.json()["error"]
                assert _publish(reg.url, reg.token, "steady", "1.1.0").status_code == 503
                _until(seen, 503)  # ... and refused while it is down
            finally:
                pg.start()
            back = len(seen)
            answers = [_until_served(http, f"{reg.url}/api/v1/skills/steady/versions") for _ in range(8)]  # both workers
            _until(seen, 200, back)  # ... and served again once it is back
        finally:
            stop.set()
            for thread in readers:
                thread.join(timeout=60)
        assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
        assert [v["version"] for v in answers[-1].json()["versions"]] == ["1.0.0"]
        assert set(seen) == {200, 503}  # served, refused cleanly while down, never a 500
        assert _publish(reg.url, reg.token, "steady", "1.1.0").status_code == 201
        assert reg.process.poll() is None


def test_s3_unreachable_during_publish_is_a_503_and_nothing_half_visible(pg_s3: Backend, tmp_path: Path) -> None:
    import boto3

    with s3_server() as own:
        boto3.client("s3", endpoint_url=own.endpoint).create_bucket(Bucket=BUCKET)
        args = ["--database", pg_s3.database, "--blobs", pg_s3.blobs, "--s3-endpoint", own.endpoint]
        with start_registry(tmp_path, storage_args=args) as reg:
            assert _publish(reg.url, reg.token, "shaky", "1.0.0").status_code == 201
            own.stop()
            lost = _publish(reg.url, reg.token, "shaky", "1.1.0")
            assert lost.status_code == 503 and lost.headers["retry-after"] == "2", lost.text
            listed = httpx.get(f"{reg.url}/api/v1/skills/shaky/versions", timeout=10).json()
            assert [v["version"] for v in listed["versions"]] == ["1.0.0"]
            assert httpx.get(f"{reg.url}/api/v1/skills/shaky", timeout=10).json()["latestVersion"]["version"] == "1.0.0"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_gc_removes_orphans_and_deleted_packages_files_on_the_command_line(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    args = storage_args(kind, tmp_path, request)
    with start_registry(tmp_path, storage_args=args[2:]) as reg:
        assert _publish(reg.url, reg.token, "kept", "1.0.0").status_code == 201
        assert _publish(reg.url, reg.token, "dropped", "1.0.0").status_code == 201
        assert httpx.delete(f"{reg.url}/api/v1/skills/dropped", headers={"Authorization": f"Bearer {reg.token}"},
                            timeout=10).status_code == 200
    gc_args = ["--data", str(reg.data_dir), *args[2:]]
    spec = (request.getfixturevalue("pg_s3").spec(reg.data_dir) if kind == "postgres"
            else StorageSpec(reg.data_dir))
    store = open_storage(spec)
    orphan = store.put_blob(b"written by a publish that never committed")
    before = {sha for sha, _ in store.list_blobs()}
    live = store.live_blobs()
    store.close()
    assert len(live) == 2 and live < before and orphan in before  # kept's SKILL.md and archive
    young = cli("gc", *gc_args)  # the default grace keeps what was just written
    assert young.returncode == 0, young.stderr
    assert young.stdout.strip() == f"removed 0 blobs; kept {len(before)} ({len(before) - 2} younger than 1h)"
    dry = cli("gc", "--dry-run", "--grace", "0s", *gc_args)
    assert dry.returncode == 0 and f"would remove {len(before) - 2} blobs" in dry.stdout and orphan in dry.stdout
    done = cli("gc", "--grace", "0", *gc_args)
    assert done.returncode == 0 and f"removed {len(before) - 2} blobs; kept 2" in done.stdout, done.stdout
    store = open_storage(spec)
    assert {sha for sha, _ in store.list_blobs()} == live
    store.close()
    bad = cli("gc", "--grace", "soon", *gc_args)
    assert bad.returncode == 2 and "--grace: 'soon' is not a duration" in bad.stderr
