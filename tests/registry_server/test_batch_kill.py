"""A batch publish is all or none when the registry process is SIGKILLed inside its transaction, on SQLite and on
PostgreSQL: the server is held inside the transaction (a slow trigger, a held advisory lock) and killed there."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import httpx

from tests._live_registry import create_token, spawn_server, stop_server
from tests._services import Postgres
from tests.registry_server._helpers import batch_body
from tests.registry_server.test_batch import cycle, pg_schema

SLUGS = (("skills", "notes"), ("roles", "designer"), ("roles", "checker"), ("roles", "lead"))


def post_batch(url: str, token: str) -> None:
    with suppress(httpx.HTTPError):  # the server dies under it
        httpx.post(f"{url}/api/v1/batch", **batch_body(cycle()), headers={"Authorization": f"Bearer {token}"},
                   timeout=60)


def published(url: str) -> list[str]:
    with httpx.Client(timeout=30) as http:
        return [f"{p}/{s}" for p, s in SLUGS if http.get(f"{url}/api/v1/{p}/{s}/versions").status_code == 200]


def kill_inside(inside: Callable[[], bool], server: subprocess.Popen[bytes], url: str, token: str) -> None:
    """Send the batch, wait until the server is inside its transaction, SIGKILL it there."""
    sender = threading.Thread(target=post_batch, args=(url, token))
    sender.start()
    deadline = time.monotonic() + 60
    while not inside():
        assert time.monotonic() < deadline and server.poll() is None, "the server never entered its transaction"
        time.sleep(0.02)
    os.kill(server.pid, signal.SIGKILL)
    server.wait(timeout=30)
    sender.join(timeout=60)


def test_sqlite_killed_inside_the_batch_transaction_keeps_none(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = create_token(data, "alice")
    db = data / "registry.sqlite3"
    with sqlite3.connect(db) as conn:  # every version row takes a while to write: the transaction stays open
        conn.execute("CREATE TRIGGER slow AFTER INSERT ON versions BEGIN SELECT count(*) FROM (WITH RECURSIVE"
                     " c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT x FROM c); END")
    server, url = spawn_server(data, tmp_path / "a.log")

    def inside() -> bool:
        probe = sqlite3.connect(db, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:  # "database is locked": the server's write transaction holds it
            return True
        finally:
            probe.close()

    try:
        kill_inside(inside, server, url, token)
    finally:
        stop_server(server)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER slow")
    again, url = spawn_server(data, tmp_path / "b.log")
    try:
        assert published(url) == []
        post_batch(url, token)
        assert published(url) == [f"{p}/{s}" for p, s in SLUGS]
    finally:
        stop_server(again)


def test_postgres_killed_inside_the_batch_transaction_keeps_none(pg: Postgres, tmp_path: Path) -> None:
    import psycopg

    database = pg_schema(pg)
    args = ["--database", database]
    data = tmp_path / "data"
    token = create_token(data, "alice", storage_args=args)
    server, url = spawn_server(data, tmp_path / "a.log", storage_args=args)
    # the batch locks and writes its packages in (kind, slug) order: holding skill/notes, the last, stops it
    # with the three roles written inside its open transaction
    with psycopg.connect(pg.url(), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtext('skill/notes'))")

        def inside() -> bool:
            row = holder.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone()
            return bool(row and row[0])

        try:
            kill_inside(inside, server, url, token)
        finally:
            stop_server(server)
            holder.execute("SELECT pg_advisory_unlock_all()")
    again, url = spawn_server(data, tmp_path / "b.log", storage_args=args)
    try:
        assert published(url) == []
        post_batch(url, token)
        assert published(url) == [f"{p}/{s}" for p, s in SLUGS]
    finally:
        stop_server(again)
