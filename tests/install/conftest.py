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
from strawpot.config_files import Project
from strawpot.model.archive import build_archive
from tests._cli import in_process

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


# -- the live registry (integration tests) -------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE_ORDER = [
    "skills/code-style", "skills/git-workflow", "skills/testing-basics", "skills/test-driven",
    "skills/diff-reading", "skills/code-review", "skills/refactoring", "skills/security-baseline",
    "skills/task-planning", "skills/github-pr", "skills/denden", "skills/strawpot-session-recap",
    "agents/stub-agent", "roles/implementer",
    "roles/reviewer", "roles/lead", "roles/scout",
]


class Registry:
    """A live `strawpot registry serve` with the repository's fixtures published, and helpers to add more."""

    def __init__(self, live: Any, workdir: Path) -> None:
        self.live = live
        self.url: str = live.url
        self.workdir = workdir
        self.client = HubClient(live.url, token=live.token)
        self._counter = 0

    def unique(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter}"

    def publish_folder(self, folder: Path, version: str | None = None) -> dict[str, Any]:
        from strawpot.publishing.prepare import prepare_upload

        upload = prepare_upload(folder, version=version)
        return self.client.publish(upload.kind.value, upload.fields, [(f.path, f.data) for f in upload.files])

    def publish(
        self,
        kind: str,
        slug: str,
        version: str,
        *,
        skills: list[str] | None = None,
        roles: list[str] | None = None,
        default_agent: str | None = None,
        files: dict[str, bytes] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Publish a generated package (frontmatter from the arguments) through the v1 multipart API."""
        import yaml

        strawpot: dict[str, Any] = dict(extra or {})
        if kind == "skill" and skills:
            strawpot["dependencies"] = skills
        elif kind == "role" and (skills or roles):
            strawpot["dependencies"] = {"skills": skills or [], "roles": roles or []}
        if default_agent:
            strawpot["default_agent"] = default_agent
        meta: dict[str, Any] = {"name": slug, "description": f"{kind} {slug} for tests", "version": version}
        if strawpot:
            meta["metadata"] = {"strawpot": strawpot}
        folder = self.workdir / f"{kind}-{slug}-{version}"
        folder.mkdir(parents=True)
        class Indented(yaml.SafeDumper):  # lists indented under their key, as strawhub's own parser needs
            def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
                super().increase_indent(flow, False)

        text = "---\n" + yaml.dump(meta, Dumper=Indented, sort_keys=False) + f"---\n# {slug} {version}\n"
        (folder / f"{kind.upper()}.md").write_text(text, encoding="utf-8")
        for path, data in (files or {}).items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
        return self.publish_folder(folder)

    def blob_path(self, sha256: str) -> Path:
        return self.live.data_dir / "blobs" / sha256[:2] / sha256


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    from tests._live_registry import start_registry

    base = tmp_path_factory.mktemp("live")
    with start_registry(base) as live:
        reg = Registry(live, base / "packages")
        for rel in FIXTURE_ORDER:
            reg.publish_folder(FIXTURES / rel, version="0.1.0" if rel.startswith("agents/") else None)
        yield reg
        reg.client.close()


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


@pytest.fixture
def cli(registry: Registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run `strawpot ARGS...` in-process against the live registry: Result(code, out, err)."""
    monkeypatch.setenv("STRAWPOT_REGISTRY_URL", registry.url)
    monkeypatch.setenv("COLUMNS", "400")

    def run(*args: str) -> Result:
        return Result(*in_process(capsys, *args))

    return run


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
