"""Blobs in an S3-compatible bucket (boto3): `s3://BUCKET/PREFIX/<ab>/<sha256>`, any endpoint (AWS, MinIO, moto)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from registry_server.storage.base import StorageUnavailable
from registry_server.storage.blobs import SHA_RE, sha256_hex


class BucketMissing(Exception):
    """The bucket does not exist (or cannot be seen with these credentials)."""


def parse_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` → ("bucket", "some/prefix"); ValueError when it is not one."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"{url!r} is not an s3://BUCKET[/PREFIX] address")
    return parts.netloc, parts.path.strip("/")


class S3Blobs:
    """Content-addressed blobs as objects; network failures become `StorageUnavailable` (a 503)."""

    def __init__(self, url: str, *, endpoint: str | None = None, create: bool = False, timeout: float = 5.0) -> None:
        import boto3
        from botocore.config import Config

        self.url = url
        self.bucket, prefix = parse_s3_url(url)
        self.prefix = f"{prefix}/" if prefix else ""
        config = Config(connect_timeout=timeout, read_timeout=timeout * 3, retries={"max_attempts": 2, "mode": "standard"},
                        max_pool_connections=64)
        self.client: Any = boto3.client("s3", endpoint_url=endpoint, config=config)
        if not self._bucket_exists():
            if not create:
                raise BucketMissing(f"the S3 bucket {self.bucket!r} does not exist at {endpoint or 'AWS'}; "
                                    "create it (`strawpot registry migrate` does)")
            self._call(self.client.create_bucket, Bucket=self.bucket)

    def _bucket_exists(self) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._call(self.client.head_bucket, Bucket=self.bucket)
        except ClientError:
            return False
        return True

    def _call(self, method: Any, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return method(**kwargs)
        except ClientError:
            raise
        except BotoCoreError as exc:  # no connection, timeouts, a closed socket
            raise StorageUnavailable(f"the S3 store {self.url} is unavailable: {exc}") from None

    def key(self, sha256: str) -> str:
        if not SHA_RE.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._call(self.client.put_object, Bucket=self.bucket, Key=self.key(digest), Body=data)  # renews its age too
        return digest

    def get(self, sha256: str) -> bytes | None:
        from botocore.exceptions import ClientError

        try:
            answer = self._call(self.client.get_object, Bucket=self.bucket, Key=self.key(sha256))
        except (ClientError, ValueError):
            return None
        data: bytes = answer["Body"].read()
        return data

    def existing_path(self, sha256: str) -> Path | None:
        return None

    def list(self) -> Iterator[tuple[str, float]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        for page in pages:
            for obj in page.get("Contents", []):
                name = obj["Key"].rsplit("/", 1)[-1]
                if SHA_RE.match(name):
                    yield name, obj["LastModified"].timestamp()

    def delete(self, sha256: str) -> None:
        self._call(self.client.delete_object, Bucket=self.bucket, Key=self.key(sha256))
