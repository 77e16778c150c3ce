"""Package builders and a thin in-process API wrapper shared by the registry tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from starlette.testclient import TestClient

    from registry_server.storage.base import Storage


def main_md(name: str, version: str = "1.0.0", *, description: str | None = None, body: str = "Body.\n",
            strawpot: dict[str, Any] | None = None, **extra: Any) -> bytes:
    meta: dict[str, Any] = {"name": name, "description": description or f"The {name} package.", "version": version}
    meta.update(extra)
    if strawpot:
        meta["metadata"] = {"strawpot": strawpot}
    return f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n{body}".encode()


def skill(name: str, version: str = "1.0.0", deps: list[str] | None = None, **kw: Any) -> dict[str, bytes]:
    return {"SKILL.md": main_md(name, version, strawpot={"dependencies": deps} if deps else None, **kw)}


def role(name: str, version: str = "1.0.0", skills: list[str] | None = None, roles: list[str] | None = None,
         **kw: Any) -> dict[str, bytes]:
    deps = {k: v for k, v in (("skills", skills), ("roles", roles)) if v}
    return {"ROLE.md": main_md(name, version, strawpot={"dependencies": deps} if deps else None, **kw)}


WRAPPER = b"#!/bin/sh\necho '{\"cmd\": [\"true\"], \"cwd\": \".\"}'\n"
BINARY = bytes(range(256)) * 4


def agent(name: str, version: str = "1.0.0") -> dict[str, bytes]:
    strawpot = {"bin": {"linux": "bin/wrapper"}, "tools": {"git": {"description": "Git", "install": {"linux": "apt-get install git"}}}}
    return {"AGENT.md": main_md(name, version, strawpot=strawpot), "bin/wrapper": WRAPPER, "data/blob.bin": BINARY}


def v1_dependencies(files: dict[str, bytes], kind: str) -> str | None:
    meta = yaml.safe_load(next(iter(files.values())).decode().split("---")[1])
    deps = (meta.get("metadata") or {}).get("strawpot", {}).get("dependencies")
    if deps is None or kind not in ("skill", "role"):
        return None
    return json.dumps({"skills": deps} if kind == "skill" else deps)


PLURAL = {"skill": "skills", "role": "roles", "agent": "agents", "memory": "memories", "integration": "integrations"}


@dataclass
class Api:
    """A TestClient over the app plus tokens for an admin, `alice` and `bob`."""

    client: TestClient
    storage: Storage
    admin: str
    alice: str
    bob: str

    def auth(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def publish(self, kind: str, files: dict[str, bytes], *, token: str | None = "alice", slug: str | None = None,
                version: str | None = None, dependencies: str | None = "auto", **fields: str) -> Any:
        """POST a multipart publish the way the strawhub client does; slug/version default to the frontmatter."""
        meta = yaml.safe_load(next(iter(files.values())).decode(errors="replace").split("---")[1] or "{}") \
            if files and next(iter(files.values())).startswith(b"---") else {}
        data = {"slug": slug or meta.get("name", ""), "version": version or str(meta.get("version", "")),
                "changelog": fields.pop("changelog", "")}
        deps = v1_dependencies(files, kind) if dependencies == "auto" and meta else dependencies
        if deps and deps != "auto":
            data["dependencies"] = deps
        data.update(fields)
        parts = [("files", (path, content, "application/octet-stream")) for path, content in files.items()]
        tok = getattr(self, token) if token in ("admin", "alice", "bob") else token
        return self.client.post(f"/api/v1/{PLURAL.get(kind, kind)}", data=data, files=parts, headers=self.auth(tok))

    def ok(self, kind: str, files: dict[str, bytes], **kw: Any) -> dict[str, Any]:
        response = self.publish(kind, files, **kw)
        assert response.status_code == 201, response.text
        return response.json()

    def batch(self, members: list[tuple[str, dict[str, bytes]]], *, token: str | None = "alice") -> Any:
        """POST /batch: each (kind, files) member as `<n>.`-prefixed fields and `<n>.files` parts."""
        return self.client.post("/api/v1/batch", **batch_body(members), headers=self.auth(getattr(self, token or "", token)))


def batch_body(members: list[tuple[str, dict[str, bytes]]]) -> dict[str, Any]:
    """The `data` and `files` of a batch request, slug, version and dependencies taken from each main file."""
    data: dict[str, str] = {}
    parts: list[tuple[str, tuple[str, bytes, str]]] = []
    for n, (kind, files) in enumerate(members):
        meta = yaml.safe_load(next(iter(files.values())).decode().split("---")[1])
        data.update({f"{n}.kind": kind, f"{n}.slug": meta["name"], f"{n}.version": str(meta["version"]),
                     f"{n}.changelog": ""})
        if (deps := v1_dependencies(files, kind)) is not None:
            data[f"{n}.dependencies"] = deps
        parts += [(f"{n}.files", (path, content, "application/octet-stream")) for path, content in files.items()]
    return {"data": data, "files": parts}
