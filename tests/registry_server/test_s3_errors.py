"""S3 errors mean what they say: only 404/NoSuchKey is a missing blob; a bucket policy that denies is a 503 with
the cause logged, never a 500 and never "not found". Against moto's real S3 server, not a mock of boto3."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from registry_server import create_app, create_token
from registry_server.storage import SQLiteStorage
from registry_server.storage.base import StorageUnavailable
from registry_server.storage.s3 import S3Blobs
from tests._cli import strawpot_here
from tests._services import S3Server
from tests.registry_server._helpers import Api, skill
from tests.registry_server.conftest import TestClient

_fresh = iter(range(1, 1_000_000))


def _deny(endpoint: str, bucket: str, *actions: str) -> None:
    statement = {"Effect": "Deny", "Principal": "*", "Action": list(actions), "Resource": f"arn:aws:s3:::{bucket}/*"}
    policy = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    boto3.client("s3", endpoint_url=endpoint).put_bucket_policy(Bucket=bucket, Policy=policy)


@pytest.fixture
def bucket(s3: S3Server) -> Iterator[str]:
    """A bucket of its own (a policy is the whole bucket's), removed with its policy afterwards."""
    name = f"denied-{next(_fresh)}"
    client = boto3.client("s3", endpoint_url=s3.endpoint)
    client.create_bucket(Bucket=name)
    yield name
    client.delete_bucket_policy(Bucket=name)


def test_a_missing_key_is_none_and_a_denied_one_is_unavailable(s3: S3Server, bucket: str) -> None:
    blobs = S3Blobs(f"s3://{bucket}/p", endpoint=s3.endpoint)
    kept = blobs.put(b"kept")
    assert blobs.get("0" * 64) is None and blobs.open("0" * 64) is None  # missing: a 404 from the store
    assert blobs.get(kept) == b"kept" and b"".join(blobs.open(kept) or []) == b"kept"
    _deny(s3.endpoint, bucket, "s3:GetObject", "s3:PutObject")
    for attempt in (lambda: blobs.get(kept), lambda: blobs.open(kept), lambda: blobs.put(b"new")):
        with pytest.raises(StorageUnavailable, match=r"unavailable: (GetObject|PutObject): (AccessDenied|403)"):
            attempt()


def test_a_denying_bucket_is_a_503_with_the_cause_logged(s3: S3Server, bucket: str, tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    storage = SQLiteStorage(tmp_path / "data", blobs=S3Blobs(f"s3://{bucket}/p", endpoint=s3.endpoint))
    client = TestClient(create_app(storage, rate_limit=0), raise_server_exceptions=False)
    api = Api(client, storage, create_token(storage, "root", admin=True), create_token(storage, "alice"), "")
    with client:
        api.ok("skill", skill("git-workflow"))
        _deny(s3.endpoint, bucket, "s3:GetObject", "s3:PutObject")
        with caplog.at_level(logging.WARNING, logger="registry_server"):
            answers = [
                api.client.get("/api/v1/skills/git-workflow/file?path=SKILL.md&version=1.0.0"),  # the fast path
                api.client.get("/api/v1/skills/git-workflow/file"),
                api.client.get("/api/v1/skills/git-workflow/versions/1.0.0/archive"),
                api.publish("skill", skill("git-workflow", "1.1.0")),
            ]
        assert [(a.status_code, a.headers.get("retry-after")) for a in answers] == [(503, "2")] * 4
        assert all("storage is unavailable" in a.json()["error"] for a in answers)
        assert "AccessDenied" in caplog.text or "403" in caplog.text
        assert [v["version"] for v in api.client.get("/api/v1/skills/git-workflow/versions").json()["versions"]] \
            == ["1.0.0"]
    storage.close()


class _LoopWatchingBlobs(S3Blobs):
    """S3 blobs that note each whole read, and whether it ran on the event loop's thread."""

    whole_reads: list[tuple[int, bool]]

    def get(self, sha256: str) -> bytes | None:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        data = super().get(sha256)
        self.whole_reads.append((len(data or b""), on_loop))
        return data


def test_remote_blobs_are_read_off_the_event_loop_and_large_ones_streamed(s3: S3Server, bucket: str,
                                                                          tmp_path: Path) -> None:
    blobs = _LoopWatchingBlobs(f"s3://{bucket}/p", endpoint=s3.endpoint)
    blobs.whole_reads = []
    storage = SQLiteStorage(tmp_path / "data", blobs=blobs)
    client = TestClient(create_app(storage, rate_limit=0), raise_server_exceptions=False)
    api = Api(client, storage, "", create_token(storage, "alice"), "")
    big = random.Random(7).randbytes(3 * 1024 * 1024)  # gzip cannot shrink it: a large archive too
    with client:
        api.ok("skill", {**skill("heavy"), "data.bin": big})
        small = api.client.get("/api/v1/skills/heavy/file?path=SKILL.md&version=1.0.0")  # the fast path's miss
        whole = api.client.get("/api/v1/skills/heavy/versions/1.0.0/archive")
        raw = api.client.get("/api/v1/skills/heavy/file?path=data.bin&version=1.0.0")
    storage.close()
    assert small.status_code == whole.status_code == raw.status_code == 200
    assert raw.content == big and len(whole.content) > len(big)
    assert [on_loop for _, on_loop in blobs.whole_reads] == [False] * len(blobs.whole_reads)
    assert all(size <= 1024 * 1024 for size, _ in blobs.whole_reads)  # the archive and data.bin came in chunks



def test_gc_against_a_bucket_that_denies_deletes_is_one_line_and_exit_1(s3: S3Server, bucket: str,
                                                                         tmp_path: Path) -> None:

    S3Blobs(f"s3://{bucket}/p", endpoint=s3.endpoint).put(b"an orphan")
    _deny(s3.endpoint, bucket, "s3:DeleteObject")
    done = strawpot_here("registry", "gc", "--grace", "0s", "--data", tmp_path / "data", "--blobs", f"s3://{bucket}/p",
                         "--s3-endpoint", s3.endpoint, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "DeleteObject: AccessDenied" in done.stderr or "DeleteObject: 403" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr
