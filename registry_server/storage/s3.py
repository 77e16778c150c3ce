"""Blobs in an S3-compatible bucket (boto3): `s3://BUCKET/PREFIX/<ab>/<sha256>`, any endpoint (AWS, MinIO, moto)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from registry_server.storage.base import StorageUnavailable
from registry_server.storage.blobs import CHUNK, SHA_RE, sha256_hex

log = logging.getLogger("registry_server")


class BucketMissing(Exception):
    """The bucket does not exist (or cannot be seen with these credentials)."""


def parse_s3_url(url: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` → ("bucket", "some/prefix"); ValueError when it is not one."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"{url!r} is not an s3://BUCKET[/PREFIX] address")
    return parts.netloc, parts.path.strip("/")


_MISSING = frozenset({"404", "NoSuchKey", "NoSuchBucket", "NotFound"})


def _missing(exc: Exception) -> bool:
    """A ClientError that means "no such object" (or bucket); anything else is the store refusing or failing."""
    error = getattr(exc, "response", {}).get("Error", {})
    return str(error.get("Code", "")) in _MISSING


class S3Blobs:
    """Content-addressed blobs as objects. Only 404/NoSuchKey means missing: access denied, throttling, a
    server error or no connection become `StorageUnavailable` (a 503, the cause in the server's log)."""

    remote = True

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
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if _missing(exc):
                return False
            raise self._unavailable("HeadBucket", exc) from None
        except BotoCoreError as exc:
            raise self._unavailable("HeadBucket", exc) from None
        return True

    def _unavailable(self, operation: str, exc: Exception) -> StorageUnavailable:
        error = getattr(exc, "response", {}).get("Error", {})
        cause = f"{error.get('Code')} ({error.get('Message', '')})" if error else str(exc)
        log.warning("S3 %s on %s failed: %s", operation, self.url, cause)
        return StorageUnavailable(f"the S3 store {self.url} is unavailable: {operation}: {cause}")

    def _call(self, method: Any, operation: str = "", **kwargs: Any) -> Any:
        """`method(**kwargs)`; every failure (a missing object included) as `StorageUnavailable`."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return method(**kwargs)
        except (ClientError, BotoCoreError) as exc:  # refused, throttled, no connection, timeouts, a closed socket
            name = operation or self.client.meta.method_to_api_mapping.get(method.__name__, method.__name__)
            raise self._unavailable(name, exc) from None

    def key(self, sha256: str) -> str:
        if not SHA_RE.match(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return f"{self.prefix}{sha256[:2]}/{sha256}"

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._call(self.client.put_object, Bucket=self.bucket, Key=self.key(digest), Body=data)  # renews its age too
        return digest

    def _get_object(self, sha256: str) -> Any | None:
        """The GetObject answer (its body not read yet), or None when there is no such object."""
        from botocore.exceptions import BotoCoreError, ClientError

        if not SHA_RE.match(sha256):
            return None
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if _missing(exc):
                return None
            raise self._unavailable("GetObject", exc) from None
        except BotoCoreError as exc:
            raise self._unavailable("GetObject", exc) from None

    def get(self, sha256: str) -> bytes | None:
        answer = self._get_object(sha256)
        if answer is None:
            return None
        data: bytes = self._read(answer["Body"].read)
        return data

    def open(self, sha256: str) -> Iterator[bytes] | None:
        answer = self._get_object(sha256)
        if answer is None:
            return None
        return self._stream(answer["Body"])

    def _stream(self, body: Any) -> Iterator[bytes]:
        try:
            chunks = body.iter_chunks(CHUNK)
            while chunk := self._read(next, chunks, b""):
                yield chunk
        finally:
            body.close()

    def _read(self, read: Any, *args: Any) -> Any:
        from botocore.exceptions import BotoCoreError

        try:
            return read(*args)
        except (BotoCoreError, OSError) as exc:  # the connection broke or timed out mid-body
            raise self._unavailable("GetObject (reading the body)", exc) from None

    def existing_path(self, sha256: str) -> Path | None:
        return None

    def list(self) -> Iterator[tuple[str, float]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        found = iter(pages)
        while (page := self._call(lambda: next(found, None), "ListObjectsV2")) is not None:
            for obj in page.get("Contents", []):
                name = obj["Key"].rsplit("/", 1)[-1]
                if SHA_RE.match(name):
                    yield name, obj["LastModified"].timestamp()

    def delete(self, sha256: str) -> None:
        self._call(self.client.delete_object, Bucket=self.bucket, Key=self.key(sha256))

