"""Fixtures for install tests: an in-memory registry behind httpx.MockTransport (unit tests only),
an isolated environment, and a project folder.

(pytest runs with --import-mode=importlib, so shared helpers are handed out as fixtures.)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub_client import Cache, HubClient
from strawpot.model.archive import build_archive
from strawpot.settings import Project

BASE = "http://hub.test"
PLURAL = {"skill": "skills", "role": "roles", "agent": "agents", "memory": "memories", "integration": "integrations"}
SINGULAR = {v: k for k, v in PLURAL.items()}


@dataclass
class FakeVersion:
    version: str
    files: dict[str, bytes]
    executables: set[str]
    dependencies: dict[str, list[str]]
    default_agent: str | None = None
    tools: dict[str, Any] = field(default_factory=dict)
    yanked: bool = False
    archive: bytes = b""
    served_archive: bytes | None = None  # when set, the bytes actually sent (corruption tests)

    def entry(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "dependencies": self.dependencies,
            "defaultAgent": self.default_agent,
            "tools": self.tools,
            "sha256": hashlib.sha256(self.archive).hexdigest(),
            "size": len(self.archive),
            "files": [
                {"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "executable": p in self.executables}
                for p, d in sorted(self.files.items())
            ],
            "yanked": self.yanked,
            "createdAt": 1,
        }


class FakeHub:
    """A request -> response function serving `/versions`, archives, files, search and listings."""

    def __init__(self) -> None:
        self.packages: dict[tuple[str, str], list[FakeVersion]] = {}
        self.requests: list[httpx.Request] = []
        self._lock = threading.Lock()

    def add(
        self,
        kind: str,
        slug: str,
        version: str,
        *,
        deps: list[str] | dict[str, list[str]] | None = None,
        default_agent: str | None = None,
        tools: dict[str, Any] | None = None,
        files: dict[str, bytes] | None = None,
        executables: set[str] | None = None,
        yanked: bool = False,
        archive: bytes | None = None,
    ) -> FakeVersion:
        main = f"{kind.upper()}.md"
        dependencies = {"skills": deps} if isinstance(deps, list) else dict(deps or {})
        body = f"---\nname: {slug}\ndescription: {slug} {version}\n---\n# {slug}\n".encode()
        all_files = {main: body, **(files or {})}
        fv = FakeVersion(version, all_files, set(executables or ()), dependencies, default_agent, tools or {}, yanked)
        fv.archive = archive if archive is not None else build_archive(all_files, fv.executables)
        self.packages.setdefault((kind, slug), []).append(fv)
        return fv

    def count(self, path_part: str) -> int:
        return sum(1 for r in self.requests if path_part in r.url.path)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.requests.append(request)
        parts = request.url.path.removeprefix("/api/v1/").split("/")
        if request.method == "POST" and parts == ["downloads"]:
            return httpx.Response(200, json={"ok": True})
        if parts == ["search"]:
            q = request.url.params.get("q", "")
            results = [
                {"kind": k, "slug": s, "displayName": s, "summary": "", "score": 1.0}
                for (k, s) in self.packages if q[:3] in s
            ]
            return httpx.Response(200, json={"results": results, "count": len(results)})
        if len(parts) == 1 and parts[0] in SINGULAR:
            kind = SINGULAR[parts[0]]
            items = [{"slug": s, "displayName": s, "summary": "", "stats": {}, "updatedAt": 1}
                     for (k, s) in self.packages if k == kind]
            return httpx.Response(200, json={"items": items})
        if len(parts) < 3 or parts[0] not in SINGULAR:
            return httpx.Response(404, json={"error": "no such route"})
        kind, slug = SINGULAR[parts[0]], parts[1]
        versions = self.packages.get((kind, slug))
        if versions is None:
            return httpx.Response(404, json={"error": f"{kind} {slug} not found"})
        if parts[2:] == ["versions"]:
            body = {"kind": kind, "slug": slug, "versions": [v.entry() for v in versions]}
            return httpx.Response(200, content=json.dumps(body).encode(), headers={"content-type": "application/json"})
        if len(parts) == 5 and parts[2] == "versions" and parts[4] == "archive":
            match = next((v for v in versions if v.version == parts[3]), None)
            if match is None:
                return httpx.Response(404, json={"error": "no such version"})
            data = match.served_archive if match.served_archive is not None else match.archive
            return httpx.Response(200, content=data, headers={"content-type": "application/gzip"})
        return httpx.Response(404, json={"error": "no such route"})


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the user's config, cache or global tree."""
    home = tmp_path / "env"
    monkeypatch.setenv("STRAWPOT_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("STRAWPOT_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("STRAWPOT_HOME", str(home / "global"))
    monkeypatch.delenv("STRAWPOT_REGISTRY_URL", raising=False)
    monkeypatch.delenv("STRAWPOT_TOKEN", raising=False)
    monkeypatch.delenv("STRAWPOT_FAULT_KILL_AT", raising=False)
    return home


@pytest.fixture
def fakehub() -> FakeHub:
    return FakeHub()


@pytest.fixture
def hub_client(fakehub: FakeHub, isolated_env: Path) -> Iterator[HubClient]:
    client = HubClient(BASE, transport=httpx.MockTransport(fakehub), cache=Cache(isolated_env / "cache"))
    yield client
    client.close()


@pytest.fixture
def project(tmp_path: Path) -> Project:
    folder = tmp_path / "proj"
    folder.mkdir()
    return Project.at(folder)
