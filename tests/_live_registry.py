"""A real `strawpot registry serve` subprocess on a free loopback port, for integration suites.

    from tests._live_registry import start_registry

    with start_registry(tmp_path) as reg:      # reg.url, reg.token (admin), reg.data_dir, reg.process
        httpx.get(f"{reg.url}/api/v1/skills")

The server picks a free port itself (`--port 0`) and the URL is read from the line it prints on
stderr once listening, so there is no race for the port. Tokens are made in this process, as the command makes them.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests._cli import STRAWPOT

_URL_RE = re.compile(r"registry listening on (http://\S+)")


@dataclass
class LiveRegistry:
    url: str
    token: str
    data_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    storage_args: tuple[str, ...] = ()

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def create_token(self, user: str, *, admin: bool = False) -> str:
        """Another user's token, minted in the same storage."""
        return create_token(self.data_dir, user, admin=admin, storage_args=self.storage_args)


def create_token(data_dir: Path, user: str, *, admin: bool = False, storage_args: Sequence[str] = ()) -> str:
    """What `strawpot registry token create --user USER --data DATA_DIR [STORAGE_ARGS]` prints, made in this process
    (two interpreter start-ups per live registry otherwise; the command itself is tested as a real process in
    tests/commands/test_missing_extras.py and tests/registry_server/test_backends.py)."""
    from registry_server import create_token as make_token
    from registry_server.storage.backends import StorageSpec, open_storage

    options = dict(zip(storage_args[::2], storage_args[1::2], strict=True))
    assert set(options) <= {"--database", "--blobs", "--s3-endpoint"}, storage_args
    storage = open_storage(StorageSpec(data_dir, options.get("--database"), options.get("--blobs"),
                                       options.get("--s3-endpoint")))
    try:
        return make_token(storage, user, admin=admin)
    finally:
        storage.close()


def spawn_server(data_dir: Path, log_path: Path, *, rate_limit: float = 0, storage_args: Sequence[str] = (),
                 workers: int = 1, serve_args: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], str]:
    """Start `strawpot registry serve --port 0` and wait until it says where it listens.

    `storage_args` are `--database/--blobs/--s3-endpoint` (see tests/registry_server/conftest.py `Backend`)."""
    log = log_path.open("wb")
    process = subprocess.Popen(
        [*STRAWPOT, "registry", "serve", "--host", "127.0.0.1", "--port", "0", "--data", str(data_dir),
                         "--rate-limit", str(rate_limit), "--workers", str(workers), *storage_args, *serve_args],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    log.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        match = _URL_RE.search(log_path.read_text(encoding="utf-8", errors="replace"))
        if match:
            return process, match.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    stop_server(process)
    raise RuntimeError(f"the registry did not start:\n{log_path.read_text(errors='replace')}")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def start_registry(tmp_path: Path, *, rate_limit: float = 0, admin: str = "admin", storage_args: Sequence[str] = (),
                   workers: int = 1, serve_args: Sequence[str] = ()) -> Iterator[LiveRegistry]:
    """A live registry with its data under `tmp_path/registry-data` (or in `storage_args`' database and bucket)
    and an admin token; stopped on exit.

    Rate limiting is off by default (`rate_limit=0`) so busy suites never see a 429.
    """
    data_dir = tmp_path / "registry-data"
    token = create_token(data_dir, admin, admin=True, storage_args=storage_args)
    process, url = spawn_server(data_dir, tmp_path / "registry.log", rate_limit=rate_limit, storage_args=storage_args,
                                workers=workers, serve_args=serve_args)
    try:
        yield LiveRegistry(url, token, data_dir, process, tmp_path / "registry.log", tuple(storage_args))
    finally:
        stop_server(process)
