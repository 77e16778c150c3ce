"""Fixtures for publishing tests: an isolated CLI environment, a live registry on loopback, a recording server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests._cli import strawpot, strawpot_here
from tests._live_registry import LiveRegistry, start_registry

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BIN = Path(sys.executable).parent
_OWN_VARS = ("STRAWPOT_TOKEN", "STRAWPOT_REGISTRY_URL", "STRAWPOT_HOME", "STRAWHUB_API_URL", "STRAWHUB_TOKEN")


@dataclass
class Env:
    """An isolated home, config and cache for running `strawpot` (and `strawhub`) as a user would."""

    root: Path
    vars: dict[str, str] = field(default_factory=dict)

    def run(
        self, *args: str, cwd: Path | None = None, input: str | None = None, timeout: float | None = None,
        extra: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`strawpot ARGS` as this user: through main() in this process, or a real subprocess where stdin or a time
        limit is part of the test."""
        if input is None and timeout is None:
            return strawpot_here(*args, cwd=cwd or self.root, env=self.vars, extra_env=extra)
        return strawpot(*args, cwd=cwd or self.root, env=self.vars, extra_env=extra, input=input,
                        timeout=timeout or 120)

    @property
    def config_file(self) -> Path:
        return Path(self.vars["STRAWPOT_CONFIG_DIR"]) / "config.toml"


@pytest.fixture
def env(tmp_path: Path) -> Env:
    root = tmp_path / "user"
    for sub in ("home", "config", "cache"):
        (root / sub).mkdir(parents=True)
    base = {k: v for k, v in os.environ.items() if k not in _OWN_VARS and not k.startswith("STRAWPOT_")}
    base.update(
        HOME=str(root / "home"), STRAWPOT_CONFIG_DIR=str(root / "config"), STRAWPOT_CACHE_DIR=str(root / "cache"),
        NO_COLOR="1", COLUMNS="200", PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return Env(root, base)


@pytest.fixture(autouse=True)
def _isolated_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process CLI calls see the same isolation as subprocesses."""
    for name in list(os.environ):
        if name in _OWN_VARS or name.startswith("STRAWPOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(tmp_path / "inproc-config"))
    monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(tmp_path / "inproc-cache"))
    monkeypatch.chdir(tmp_path)


# -- a live reference registry (the shared tests/_live_registry.py) ------------------------------------------


@dataclass
class Registry:
    """A live registry and the token of `alice`, a plain user who owns what the tests publish."""

    url: str
    token: str
    live: LiveRegistry

    def token_for(self, user: str, *, admin: bool = False) -> str:
        return self.live.create_token(user, admin=admin)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    """`strawpot registry serve` on a free loopback port, with a token for user `alice`."""
    with start_registry(tmp_path) as live:
        yield Registry(live.url, live.create_token("alice"), live)


@pytest.fixture(scope="module")
def module_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """One live registry shared by the tests of a module (an end-to-end story)."""
    with start_registry(tmp_path_factory.mktemp("registry")) as live:
        yield Registry(live.url, live.create_token("alice"), live)


# -- a server that records every request and answers with a fixed reply ----------------------------------


@dataclass
class Recorder:
    url: str
    requests: list[tuple[str, str]]
    reply: list[tuple[int, bytes]]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A loopback HTTP server that records (method, path) of every request; reply with `reply[0]`."""
    requests: list[tuple[str, str]] = []
    reply: list[tuple[int, bytes]] = [(500, json.dumps({"error": "recorder: no reply set"}).encode())]

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            requests.append((self.command, self.path))
            status, body = reply[0]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Recorder(f"http://127.0.0.1:{server.server_address[1]}", requests, reply)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL where nothing listens (any request would fail with exit 6)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def write_package(dest: Path, files: dict[str, str | bytes], executables: tuple[str, ...] = ()) -> Path:
    for rel, content in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        if rel in executables:
            path.chmod(0o755)
    return dest


@pytest.fixture
def make_package() -> object:
    """`make_package(dest, {path: text or bytes}, executables=(...))` writes a package folder."""
    return write_package


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A copy of fixtures/workspace: a skill, two roles in a cycle and a role that needs both."""
    return Path(shutil.copytree(FIXTURES / "workspace", tmp_path / "ws"))
